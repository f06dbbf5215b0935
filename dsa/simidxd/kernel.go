package simidxd

import (
	"fmt"
	"math/bits"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// Software command status values (include/uapi/linux/idxd.h, enum idxd_scmd_stat) and the one
// hardware status the simulator produces (registers.h, IDXD_CMDSTS_ERR_GRP_CONFIG).
const (
	scmdWQNoGroup        = 0x80030000
	scmdWQNoName         = 0x80040000
	scmdWQNoSVM          = 0x80050000
	scmdWQNoThresh       = 0x80060000
	scmdWQNoSWQSupport   = 0x800c0000
	scmdWQNoneConfigured = 0x800d0000
	scmdWQUserNoIOMMU    = 0x80110000
	scmdWQNoDrvName      = 0x80200000
	cmdstsErrGrpConfig   = 0x15
)

// store is the kernel's store handler for the attribute at rel (the real, link-free path relative
// to the root); value is the written bytes.
func (s *Sim) store(rel, value string) syscall.Errno {
	arg := strings.TrimSuffix(value, "\n")
	switch {
	case rel == stateDir || strings.HasPrefix(rel, stateDir+"/"):
		return syscall.EACCES // the simulator's own files are not part of the machine
	case strings.HasPrefix(rel, "dev/"):
		return syscall.EINVAL // the idxd and vfio character devices have no write(2)
	}
	dir, attr := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if drv, ok := strings.CutPrefix(dir, "sys/bus/dsa/drivers/"); ok && !strings.Contains(drv, "/") {
		switch attr {
		case "bind":
			return s.dsaBind(drv, arg)
		case "unbind":
			return s.dsaUnbind(drv, arg)
		}
	}
	if drv, ok := strings.CutPrefix(dir, "sys/bus/pci/drivers/"); ok && !strings.Contains(drv, "/") {
		switch attr {
		case "bind":
			return s.pciBind(drv, arg)
		case "unbind":
			return s.pciUnbind(drv, arg)
		case "new_id":
			return s.pciNewID(drv, arg)
		}
	}
	parts := strings.Split(dir, "/")
	if len(parts) >= 4 && parts[0] == "sys" && parts[1] == "devices" {
		if d := s.byBDF(parts[3]); d != nil && parts[2] == d.PCIRoot {
			switch {
			case len(parts) == 4 && attr == "driver_override":
				return s.setOverride(d, value)
			case len(parts) == 5 && parts[4] == d.name():
				return s.devStore(d, attr, arg)
			case len(parts) == 6 && parts[4] == d.name():
				dd, kind, idx := s.lookup(parts[5])
				if dd == d {
					return s.subStore(d, kind, idx, attr, value)
				}
			}
		}
	}
	return s.setErr(rel, arg) // an attribute without special rules: plain store
}

// setErr writes an attribute and maps a failure to EIO.
func (s *Sim) setErr(p, v string) syscall.Errno {
	if err := s.set(p, v); err != nil {
		return syscall.EIO
	}
	return 0
}

func (s *Sim) byBDF(bdf string) *devSpec {
	for i := range s.spec.Devices {
		if s.spec.Devices[i].BDF == bdf {
			return &s.spec.Devices[i]
		}
	}
	return nil
}

func (s *Sim) enabled(d *devSpec) bool { return s.read(d.dir()+"/state") == "enabled" }

// devStore is a dsaN attribute's store.
func (s *Sim) devStore(d *devSpec, attr, arg string) syscall.Errno {
	p := d.dir() + "/" + attr
	switch attr {
	case "cmd_status":
		return s.setErr(p, "0")
	case "read_buffer_limit", "token_limit":
		n, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		if s.enabled(d) || !d.Configurable {
			return syscall.EPERM
		}
		if n > maxReadBuffers {
			return syscall.EINVAL
		}
		v := strconv.FormatUint(n, 10)
		if e := s.setErr(d.dir()+"/read_buffer_limit", v); e != 0 {
			return e
		}
		return s.setErr(d.dir()+"/token_limit", v)
	}
	return syscall.EACCES
}

// subStore is a WQ's, engine's or group's attribute store; value is the raw written bytes.
func (s *Sim) subStore(d *devSpec, kind string, idx int, attr, value string) syscall.Errno {
	switch kind {
	case "wq":
		return s.wqStore(d, idx, attr, value)
	case "engine":
		if attr != "group_id" {
			return syscall.EACCES
		}
		id, errno := s.groupArg(d, strings.TrimSuffix(value, "\n"))
		if errno != 0 {
			return errno
		}
		if e := s.setErr(d.subDir("engine", idx)+"/group_id", strconv.Itoa(id)); e != 0 {
			return e
		}
		return s.syncGroups(d)
	case "group":
		return s.groupStore(d, idx, attr, strings.TrimSuffix(value, "\n"))
	}
	return syscall.EACCES
}

// groupArg parses a group_id write: EINVAL unparsable, EPERM unconfigurable, EINVAL out of range.
func (s *Sim) groupArg(d *devSpec, arg string) (int, syscall.Errno) {
	id, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return 0, syscall.EINVAL
	}
	if !d.Configurable {
		return 0, syscall.EPERM
	}
	if id < -1 || id > int64(d.MaxGroups-1) {
		return 0, syscall.EINVAL
	}
	return int(id), 0
}

func (s *Sim) groupStore(d *devSpec, idx int, attr, arg string) syscall.Errno {
	g := d.subDir("group", idx)
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		return syscall.EINVAL
	}
	if !d.Configurable || s.enabled(d) {
		return syscall.EPERM
	}
	var names []string
	switch attr {
	case "traffic_class_a", "traffic_class_b":
		return syscall.EPERM // device version 1 without the tc_override module parameter
	case "use_read_buffer_limit", "use_token_limit":
		if s.read(d.dir()+"/read_buffer_limit") == "0" {
			return syscall.EPERM
		}
		names = []string{"use_read_buffer_limit", "use_token_limit"}
		n = min(n, 1)
	case "read_buffers_allowed", "tokens_allowed", "read_buffers_reserved", "tokens_reserved":
		if n > maxReadBuffers {
			return syscall.EINVAL
		}
		kind := "allowed"
		if strings.HasSuffix(attr, "reserved") {
			kind = "reserved"
		}
		names = []string{"read_buffers_" + kind, "tokens_" + kind}
	default:
		return syscall.EACCES
	}
	for _, a := range names {
		if e := s.setErr(g+"/"+a, strconv.FormatUint(n, 10)); e != 0 {
			return e
		}
	}
	return 0
}

// wqStore is a WQ attribute's store (drivers/dma/idxd/sysfs.c), in the kernel's check order.
func (s *Sim) wqStore(d *devSpec, idx int, attr, value string) syscall.Errno {
	q := d.subDir("wq", idx)
	arg := strings.TrimSuffix(value, "\n")
	wqOn := s.read(q+"/state") != "disabled"
	set := func(v string) syscall.Errno { return s.setErr(q+"/"+attr, v) }
	switch attr {
	case "group_id":
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		if !d.Configurable || wqOn {
			return syscall.EPERM
		}
		if id < -1 || id > int64(d.MaxGroups-1) {
			return syscall.EINVAL
		}
		if e := set(strconv.FormatInt(id, 10)); e != 0 {
			return e
		}
		return s.syncGroups(d)
	case "mode":
		if !d.Configurable || wqOn {
			return syscall.EPERM
		}
		switch arg {
		case "dedicated":
			if e := s.setErr(q+"/threshold", "0"); e != 0 {
				return e
			}
			return set(arg)
		case "shared":
			return set(arg)
		}
		return syscall.EINVAL
	case "size":
		n, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		if !d.Configurable || s.enabled(d) {
			return syscall.EPERM
		}
		total := uint64(0)
		for i := range d.MaxWQs {
			if i != idx {
				total += uint64(atoi(s.read(d.subDir("wq", i) + "/size")))
			}
		}
		if n > uint64(d.MaxWQSize) || total+n > uint64(d.MaxWQSize) {
			return syscall.EINVAL
		}
		return set(strconv.FormatUint(n, 10))
	case "priority":
		n, err := strconv.ParseUint(arg, 10, 64)
		if err != nil {
			return syscall.EINVAL
		}
		if !d.Configurable || wqOn {
			return syscall.EPERM
		}
		if n > maxPriority {
			return syscall.EINVAL
		}
		return set(strconv.FormatUint(n, 10))
	case "block_on_fault":
		if !d.Configurable {
			return syscall.EPERM
		}
		if wqOn {
			return syscall.ENXIO
		}
		b, ok := kstrtobool(arg)
		if !ok {
			return syscall.EINVAL
		}
		return set(boolAttr(b))
	case "threshold":
		n, err := parseUintBase0(arg, 32)
		if err != nil || n == 0 || n > uint64(atoi(s.read(q+"/size"))) {
			return syscall.EINVAL
		}
		if !d.Configurable {
			return syscall.EPERM
		}
		if wqOn {
			return syscall.ENXIO
		}
		if s.read(q+"/mode") == "dedicated" {
			return syscall.EINVAL
		}
		return set(strconv.FormatUint(n, 10))
	case "type":
		if wqOn {
			return syscall.EPERM
		}
		if arg != "none" && arg != "kernel" && arg != "user" {
			return syscall.EINVAL
		}
		if s.read(q+"/type") != arg {
			if e := s.setErr(q+"/name", ""); e != 0 {
				return e
			}
		}
		return set(arg)
	case "name", "driver_name":
		if wqOn {
			return syscall.EPERM
		}
		limit := wqNameSize
		if attr == "driver_name" {
			limit = driverNameSize
		}
		if len(value) == 0 || len(value) > limit {
			return syscall.EINVAL
		}
		return set(strings.TrimSpace(value))
	case "max_transfer_size", "max_batch_size":
		if !d.Configurable || wqOn {
			return syscall.EPERM
		}
		n, err := parseUintBase0(arg, 64)
		if err != nil || n == 0 || n > 1<<63 {
			return syscall.EINVAL
		}
		n = roundUpPow2(n)
		limit := d.MaxTransfer
		if attr == "max_batch_size" {
			limit = uint64(d.MaxBatch)
		}
		if n > limit {
			return syscall.EINVAL
		}
		return set(strconv.FormatUint(n, 10))
	case "ats_disable":
		if wqOn {
			return syscall.EPERM
		}
		b, ok := kstrtobool(arg)
		if !ok {
			return syscall.EINVAL
		}
		return set(boolAttr(b))
	case "enqcmds_retries":
		if s.read(q+"/mode") == "dedicated" {
			return syscall.EOPNOTSUPP
		}
		n, err := strconv.ParseUint(arg, 10, 32)
		if err != nil {
			return syscall.EINVAL
		}
		return set(strconv.FormatUint(min(n, maxEnqcmdsRetries), 10))
	}
	return syscall.EACCES
}

// ---- dsa bus drivers ----

// dsaBind is /sys/bus/dsa/drivers/<drv>/bind: the driver core's bind_store, then the driver's
// probe.
func (s *Sim) dsaBind(drv, name string) syscall.Errno {
	d, kind, idx := s.lookup(name)
	if d == nil || !s.exists("sys/bus/dsa/devices/"+name) || !s.matches(drv, kind) {
		return syscall.ENODEV
	}
	devPath := d.dir()
	if kind == "wq" {
		devPath = d.subDir("wq", idx)
	}
	if s.exists(devPath + "/driver") {
		return syscall.EBUSY
	}
	var errno syscall.Errno
	switch {
	case kind == "dsa":
		errno = s.probeDevice(d)
	case drv == "dsa":
		errno = s.probeWQOld(d, idx)
	default:
		errno = s.probeWQ(d, idx, drv)
	}
	if errno != 0 {
		return errno
	}
	if s.link(devPath+"/driver", "sys/bus/dsa/drivers/"+drv) != nil ||
		s.link("sys/bus/dsa/drivers/"+drv+"/"+name, devPath) != nil {
		return syscall.EIO
	}
	return 0
}

// matches is the dsa bus's match: idxd takes devices, user and dmaengine take WQs, the old
// single "dsa" driver takes both; nothing takes engines or groups.
func (s *Sim) matches(drv, kind string) bool {
	if !s.exists("sys/bus/dsa/drivers/" + drv) {
		return false
	}
	switch drv {
	case "idxd":
		return kind == "dsa"
	case "user", "dmaengine":
		return kind == "wq"
	case "dsa":
		return kind == "dsa" || kind == "wq"
	}
	return false
}

// dsaUnbind is /sys/bus/dsa/drivers/<drv>/unbind.
func (s *Sim) dsaUnbind(drv, name string) syscall.Errno {
	d, kind, idx := s.lookup(name)
	if d == nil || !s.exists("sys/bus/dsa/devices/"+name) {
		return syscall.ENODEV
	}
	devPath := d.dir()
	if kind == "wq" {
		devPath = d.subDir("wq", idx)
	}
	if s.linkBase(devPath+"/driver") != drv || !s.exists("sys/bus/dsa/drivers/"+drv) {
		return syscall.ENODEV
	}
	switch kind {
	case "dsa":
		if atoi(s.read(d.dir()+"/clients")) > 0 {
			return syscall.EBUSY // simulator's choice: the kernel would tear down under the clients
		}
		if e := s.removeDevice(d); e != 0 {
			return e
		}
	case "wq":
		if atoi(s.read(devPath+"/clients")) > 0 {
			return syscall.EBUSY // as above
		}
		if e := s.releaseWQ(d, idx); e != 0 {
			return e
		}
	default:
		return syscall.ENODEV
	}
	if s.remove(devPath+"/driver") != nil || s.remove("sys/bus/dsa/drivers/"+drv+"/"+name) != nil {
		return syscall.EIO
	}
	return 0
}

// probeDevice is idxd_device_drv_probe: write the configuration, enable.
func (s *Sim) probeDevice(d *devSpec) syscall.Errno {
	if s.enabled(d) {
		return syscall.ENXIO
	}
	if d.Configurable {
		if status, errno := s.deviceConfig(d); errno != 0 {
			if status != 0 {
				if e := s.setCmdStatus(d, status); e != 0 {
					return e
				}
			}
			return syscall.ENXIO
		}
	}
	if e := s.setErr(d.dir()+"/state", "enabled"); e != 0 {
		return e
	}
	return s.setCmdStatus(d, 0)
}

// deviceConfig is idxd_device_config: the checks of idxd_wqs_setup and idxd_engines_setup, the
// hardware's group check, and the default size of typed WQs (idxd_wq_config_write).
func (s *Sim) deviceConfig(d *devSpec) (uint32, syscall.Errno) {
	configured := 0
	wqGroups := map[int]bool{}
	for i := range d.MaxWQs {
		q := d.subDir("wq", i)
		g := atoi(s.read(q + "/group_id"))
		if g < 0 || (s.spec.OldKernel && atoi(s.read(q+"/size")) == 0) {
			continue
		}
		if s.read(q+"/mode") == "shared" && !d.PASID {
			return scmdWQNoSWQSupport, syscall.EINVAL
		}
		wqGroups[g] = true
		configured++
	}
	if configured == 0 {
		return scmdWQNoneConfigured, syscall.EINVAL
	}
	engGroups := map[int]bool{}
	for i := range d.MaxEngines {
		if g := atoi(s.read(d.subDir("engine", i) + "/group_id")); g >= 0 {
			engGroups[g] = true
		}
	}
	if len(engGroups) == 0 {
		return 0, syscall.EINVAL
	}
	for g := range wqGroups {
		if !engGroups[g] {
			return cmdstsErrGrpConfig, syscall.EINVAL
		}
	}
	for i := range d.MaxWQs {
		q := d.subDir("wq", i)
		if atoi(s.read(q+"/group_id")) >= 0 && s.read(q+"/size") == "0" && s.read(q+"/type") != "none" {
			if e := s.setErr(q+"/size", strconv.Itoa(wqDefaultSize)); e != 0 {
				return 0, e
			}
		}
	}
	return 0, 0
}

func (s *Sim) setCmdStatus(d *devSpec, status uint32) syscall.Errno {
	v := "0"
	if status != 0 {
		v = fmt.Sprintf("%#x", status)
	}
	return s.setErr(d.dir()+"/cmd_status", v)
}

// probeWQ is idxd_user_drv_probe (drv "user") and idxd_dmaengine_drv_probe (drv "dmaengine").
func (s *Sim) probeWQ(d *devSpec, idx int, drv string) syscall.Errno {
	q := d.subDir("wq", idx)
	if !s.enabled(d) {
		return syscall.ENXIO
	}
	if s.exists(q+"/driver_name") && !strings.HasPrefix(s.read(q+"/driver_name"), drv) {
		if e := s.setCmdStatus(d, scmdWQNoDrvName); e != 0 {
			return e
		}
		return syscall.ENODEV
	}
	if drv == "user" && !d.PASID {
		if e := s.setCmdStatus(d, scmdWQUserNoIOMMU); e != 0 {
			return e
		}
		return syscall.EOPNOTSUPP
	}
	typ := "user"
	if drv == "dmaengine" {
		typ = "kernel"
	}
	if e := s.setErr(q+"/type", typ); e != 0 {
		return e
	}
	status, errno := s.enableWQ(d, idx)
	if errno != 0 {
		if status != 0 {
			if e := s.setCmdStatus(d, status); e != 0 {
				return e
			}
		}
		if e := s.setErr(q+"/type", "none"); e != 0 {
			return e
		}
		return syscall.ENXIO
	}
	if typ == "user" {
		if e := s.addCdev(d, idx); e != 0 {
			return e
		}
	}
	if e := s.setErr(q+"/state", "enabled"); e != 0 {
		return e
	}
	return s.setCmdStatus(d, 0)
}

// enableWQ is drv_enable_wq's checks and the configuration write before the enable command.
func (s *Sim) enableWQ(d *devSpec, idx int) (uint32, syscall.Errno) {
	q := d.subDir("wq", idx)
	if s.read(q+"/group_id") == "-1" {
		return scmdWQNoGroup, syscall.ENXIO
	}
	if s.read(q+"/name") == "" {
		return scmdWQNoName, syscall.ENXIO
	}
	if s.read(q+"/mode") == "shared" {
		if !d.PASID {
			return scmdWQNoSVM, syscall.ENXIO
		}
		if s.read(q+"/threshold") == "0" {
			return scmdWQNoThresh, syscall.ENXIO
		}
	}
	return s.deviceConfig(d)
}

// probeWQOld is the 5.10-era single driver's WQ probe.
func (s *Sim) probeWQOld(d *devSpec, idx int) syscall.Errno {
	q := d.subDir("wq", idx)
	if !s.enabled(d) {
		return syscall.EPERM
	}
	typ := s.read(q + "/type")
	if s.read(q+"/group_id") == "-1" || s.read(q+"/name") == "" || typ == "none" || s.read(q+"/size") == "0" {
		return syscall.EINVAL
	}
	if s.read(q+"/mode") == "shared" {
		if !d.PASID {
			return syscall.ENXIO
		}
		if s.read(q+"/threshold") == "0" {
			return syscall.EINVAL
		}
	}
	if _, errno := s.deviceConfig(d); errno != 0 {
		return syscall.ENXIO
	}
	if typ == "user" {
		if e := s.addCdev(d, idx); e != 0 {
			return e
		}
	}
	return s.setErr(q+"/state", "enabled")
}

// addCdev creates the WQ's character device: the lowest free minor and /dev/dsa/wqN.M.
func (s *Sim) addCdev(d *devSpec, idx int) syscall.Errno {
	used := map[int]bool{}
	for i := range s.spec.Devices {
		dd := &s.spec.Devices[i]
		for j := range dd.MaxWQs {
			if m := s.read(dd.subDir("wq", j) + "/cdev_minor"); m != "" {
				used[atoi(m)] = true
			}
		}
	}
	minor := 0
	for used[minor] {
		minor++
	}
	if s.put(d.subDir("wq", idx)+"/cdev_minor", strconv.Itoa(minor)+"\n", 0o444) != nil ||
		s.put("dev/dsa/"+d.sub("wq", idx), strings.Repeat("\x00", portalSize), 0o600) != nil {
		return syscall.EIO
	}
	return 0
}

// releaseWQ is a WQ driver's remove: the character device goes, the WQ is disabled and its
// configuration other than size and group is reset (idxd_wq_disable_cleanup).
func (s *Sim) releaseWQ(d *devSpec, idx int) syscall.Errno {
	q := d.subDir("wq", idx)
	if s.remove("dev/dsa/"+d.sub("wq", idx)) != nil || s.put(q+"/cdev_minor", "", 0o444) != nil {
		return syscall.EIO
	}
	for _, a := range []struct{ name, v string }{
		{"state", "disabled"}, {"clients", "0"}, {"type", "none"}, {"name", ""}, {"mode", "shared"},
		{"priority", "0"}, {"threshold", "0"}, {"block_on_fault", "0"}, {"ats_disable", "0"},
		{"max_batch_size", strconv.Itoa(wqDefaultMaxBatch)}, {"max_transfer_size", strconv.Itoa(wqDefaultMaxXfer)},
	} {
		if s.setIfExists(q+"/"+a.name, a.v) != nil {
			return syscall.EIO
		}
	}
	if s.remove(q+"/driver") != nil {
		return syscall.EIO
	}
	for _, drv := range []string{"user", "dmaengine", "dsa"} {
		if s.remove("sys/bus/dsa/drivers/"+drv+"/"+d.sub("wq", idx)) != nil {
			return syscall.EIO
		}
	}
	return s.syncClients(d)
}

// removeDevice is idxd_device_drv_remove: release the enabled WQs, disable, and clear the whole
// configuration (idxd_device_clear_state on a configurable device).
func (s *Sim) removeDevice(d *devSpec) syscall.Errno {
	for i := range d.MaxWQs {
		if s.read(d.subDir("wq", i)+"/state") == "enabled" {
			if e := s.releaseWQ(d, i); e != 0 {
				return e
			}
		}
	}
	if d.Configurable {
		for i := range d.MaxWQs {
			q := d.subDir("wq", i)
			for _, a := range s.wqAttrs() {
				if a.mode&0o222 != 0 && a.name != "driver_name" && a.name != "enqcmds_retries" {
					if s.set(q+"/"+a.name, a.value) != nil {
						return syscall.EIO
					}
				}
			}
		}
		for i := range d.MaxEngines {
			if s.set(d.subDir("engine", i)+"/group_id", "-1") != nil {
				return syscall.EIO
			}
		}
		for i := range d.MaxGroups {
			for _, a := range groupAttrs() {
				if s.set(d.subDir("group", i)+"/"+a.name, a.value) != nil {
					return syscall.EIO
				}
			}
		}
		if e := s.syncGroups(d); e != 0 {
			return e
		}
	}
	return s.setErr(d.dir()+"/state", "disabled")
}

// syncGroups rewrites every group's engines and work_queues lists from the group_id attributes.
func (s *Sim) syncGroups(d *devSpec) syscall.Errno {
	for g := range d.MaxGroups {
		for _, kind := range []struct{ sub, attr string }{{"engine", "engines"}, {"wq", "work_queues"}} {
			limit := d.MaxEngines
			if kind.sub == "wq" {
				limit = d.MaxWQs
			}
			var members []string
			for i := range limit {
				if s.read(d.subDir(kind.sub, i)+"/group_id") == strconv.Itoa(g) {
					members = append(members, d.sub(kind.sub, i))
				}
			}
			content := ""
			if len(members) > 0 {
				content = strings.Join(members, " ") + "\n"
			}
			if s.put(d.subDir("group", g)+"/"+kind.attr, content, 0o444) != nil {
				return syscall.EIO
			}
		}
	}
	return 0
}

// setClients sets one WQ's client count and the device's total.
func (s *Sim) setClients(d *devSpec, idx, n int) syscall.Errno {
	if e := s.setErr(d.subDir("wq", idx)+"/clients", strconv.Itoa(n)); e != 0 {
		return e
	}
	return s.syncClients(d)
}

func (s *Sim) syncClients(d *devSpec) syscall.Errno {
	total := 0
	for i := range d.MaxWQs {
		total += atoi(s.read(d.subDir("wq", i) + "/clients"))
	}
	return s.setErr(d.dir()+"/clients", strconv.Itoa(total))
}

// ---- parsing as the kernel does ----

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// kstrtobool: y/Y/1 and n/N/0 by the first character, on/off by the first two.
func kstrtobool(s string) (bool, bool) {
	if s == "" {
		return false, false
	}
	switch s[0] {
	case 'y', 'Y', '1':
		return true, true
	case 'n', 'N', '0':
		return false, true
	case 'o', 'O':
		if len(s) > 1 {
			switch s[1] {
			case 'n', 'N':
				return true, true
			case 'f', 'F':
				return false, true
			}
		}
	}
	return false, false
}

// parseUintBase0 is kstrtou*(s, 0): decimal, 0x hex or 0 octal, no underscores or signs.
func parseUintBase0(s string, bitSize int) (uint64, error) {
	if strings.ContainsAny(s, "_+-") {
		return 0, strconv.ErrSyntax
	}
	if len(s) > 1 && s[0] == '0' && s[1] != 'x' && s[1] != 'X' {
		return strconv.ParseUint(s[1:], 8, bitSize)
	}
	return strconv.ParseUint(s, 0, bitSize)
}

func roundUpPow2(n uint64) uint64 {
	if n&(n-1) == 0 {
		return n
	}
	return 1 << bits.Len64(n)
}
