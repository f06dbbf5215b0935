package replica

// InterfaceStatus is what ovs-vswitchd reports about one Interface row, read from the compact
// row without building the row's maps: the status columns and a view of external_ids.
type InterfaceStatus struct {
	Name, Type string
	// Error, LinkState, AdminState and MAC are "" when the column is empty.
	Error, LinkState, AdminState, MAC string
	// Ofport and MTU are 0 when the column is empty (HasOfport, HasMTU say which).
	Ofport, MTU       int
	HasOfport, HasMTU bool
	// Statistics is nil unless the store keeps statistics and the row has some; a fresh map.
	Statistics  map[string]int
	ExternalIDs Tags
}

// status reads r's status columns.
func (r *ifaceRow) status() InterfaceStatus {
	v := r.vals() // shares r's strings and pair slices; builds no map
	st := InterfaceStatus{Name: v.name, Type: v.typ, Error: v.err, MAC: v.mac,
		Ofport: int(v.ints[0]), HasOfport: v.hasInt[0], MTU: int(v.ints[1]), HasMTU: v.hasInt[1],
		ExternalIDs: Tags{r.section(2)}}
	if v.link != 0 {
		st.LinkState = upDownName(v.link)
	}
	if v.admin != 0 {
		st.AdminState = upDownName(v.admin)
	}
	if len(v.stats) > 0 {
		st.Statistics = make(map[string]int, len(v.stats))
		for _, p := range v.stats {
			st.Statistics[p.k] = int(p.v)
		}
	}
	return st
}

// EachInterfaceStatus calls fn with the status of every Interface row, in no particular order,
// until fn returns false: what a status refresh reads, without materialising 10,000 rows with
// their maps. It iterates over the rows held when it was called; fn may call the store.
func (s *Store) EachInterfaceStatus(fn func(InterfaceStatus) bool) {
	s.mu.RLock()
	rows := make([]*ifaceRow, 0, len(s.cur.ifaces))
	for _, r := range s.cur.ifaces {
		rows = append(rows, r)
	}
	s.mu.RUnlock()
	for _, r := range rows {
		if !fn(r.status()) {
			return
		}
	}
}

// InterfaceStatusOf returns the status of the Interface row named name.
func (s *Store) InterfaceStatusOf(name string) (InterfaceStatus, bool) {
	s.mu.RLock()
	r := s.cur.ifName[name]
	s.mu.RUnlock()
	if r == nil {
		return InterfaceStatus{}, false
	}
	return r.status(), true
}
