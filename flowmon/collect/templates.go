package collect

import (
	"sync"

	"github.com/netsampler/goflow2/v2/decoders/netflow"
)

// templateSystem is goflow2's NetFlowTemplateSystem for one exporter, bounded: at most
// MaxDomains (version, domain) pairs, MaxTemplates templates per pair, MaxFields fields per
// template. goflow2 keys templates by (version, domain, template id); the exporter is the map
// this system belongs to.
type templateSystem struct {
	lim       Limits
	mu        sync.RWMutex
	templates map[uint64]any
	perDomain map[uint64]int
}

var _ netflow.NetFlowTemplateSystem = (*templateSystem)(nil)

func newTemplateSystem(lim Limits) *templateSystem {
	return &templateSystem{lim: lim, templates: make(map[uint64]any), perDomain: make(map[uint64]int)}
}

func templateKey(version uint16, domain uint32, id uint16) uint64 {
	return uint64(version)<<48 | uint64(domain)<<16 | uint64(id)
}

// templateShape returns a template's field count and whether any field has a non-zero
// length; a template without one would make goflow2's data set loop never advance.
func templateShape(t any) (fields int, advances bool) {
	var lists [2][]netflow.Field
	switch t := t.(type) {
	case netflow.TemplateRecord:
		lists[0] = t.Fields
	case netflow.NFv9OptionsTemplateRecord:
		lists[0], lists[1] = t.Scopes, t.Options
	case netflow.IPFIXOptionsTemplateRecord:
		lists[0], lists[1] = t.Scopes, t.Options
	default:
		return 0, false
	}
	for _, l := range lists {
		fields += len(l)
		for _, f := range l {
			if f.Length != 0 {
				advances = true
			}
		}
	}
	return fields, advances
}

// AddTemplate stores a template, or withdraws it when it has no fields (IPFIX template
// withdrawal); it refuses templates over the limits and templates whose records would have
// no size with ErrTemplateLimit, which goflow2 wraps and the decoder counts.
func (ts *templateSystem) AddTemplate(version uint16, domain uint32, id uint16, t any) error {
	fields, advances := templateShape(t)
	key := templateKey(version, domain, id)
	dkey := uint64(version)<<32 | uint64(domain)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, exists := ts.templates[key]
	if fields == 0 {
		if exists {
			delete(ts.templates, key)
			ts.perDomain[dkey]--
		}
		return nil
	}
	if fields > ts.lim.MaxFields || !advances {
		return ErrTemplateLimit
	}
	if !exists {
		n, known := ts.perDomain[dkey]
		if (!known && len(ts.perDomain) >= ts.lim.MaxDomains) || n >= ts.lim.MaxTemplates {
			return ErrTemplateLimit
		}
		ts.perDomain[dkey] = n + 1
	}
	ts.templates[key] = t
	return nil
}

// GetTemplate returns a stored template or netflow.ErrorTemplateNotFound.
func (ts *templateSystem) GetTemplate(version uint16, domain uint32, id uint16) (any, error) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	if t, ok := ts.templates[templateKey(version, domain, id)]; ok {
		return t, nil
	}
	return nil, netflow.ErrorTemplateNotFound
}

// RemoveTemplate deletes a stored template.
func (ts *templateSystem) RemoveTemplate(version uint16, domain uint32, id uint16) (any, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	key := templateKey(version, domain, id)
	t, ok := ts.templates[key]
	if !ok {
		return nil, netflow.ErrorTemplateNotFound
	}
	delete(ts.templates, key)
	ts.perDomain[uint64(version)<<32|uint64(domain)]--
	return t, nil
}

// GetTemplates returns a copy of every stored template.
func (ts *templateSystem) GetTemplates() netflow.FlowBaseTemplateSet {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	out := make(netflow.FlowBaseTemplateSet, len(ts.templates))
	for k, v := range ts.templates {
		out[k] = v
	}
	return out
}

// count returns how many templates are stored (for tests and bounds checks).
func (ts *templateSystem) count() int {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return len(ts.templates)
}
