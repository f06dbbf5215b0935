package dsaplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// stateFile is the name of the plugin's record, in its data dir, of the devices it configured.
const stateFile = "devices.json"

// maxStateBytes bounds the record.
const maxStateBytes = 64 << 10

// owned is a device the plugin configured (or was about to: it is recorded before the first
// write), so that it resets the device once the configuration no longer names it.
type owned struct {
	// Config is the name the configuration used (dsa0 or a PCI address).
	Config string `json:"config"`
	// Name and BDF are the device's idxd name and PCI address, when known.
	Name string `json:"name,omitempty"`
	BDF  string `json:"bdf,omitempty"`
}

// names reports whether the device is the one a configuration names as n.
func (o owned) names(n string) bool { return n != "" && (n == o.Config || n == o.Name || n == o.BDF) }

// ref is the name Reset is given: the PCI address when known (it stays when the idxd name
// goes, under vfio-pci), else the idxd name, else the configuration's.
func (o owned) ref() string {
	switch {
	case o.BDF != "":
		return o.BDF
	case o.Name != "":
		return o.Name
	}
	return o.Config
}

// record is the content of the state file.
type record struct {
	// Machine is the root or simulated kernel the devices belong to.
	Machine string  `json:"machine"`
	Devices []owned `json:"devices"`
}

// store keeps the record in a directory (the plugin's data dir); with no directory it keeps
// nothing, and the plugin then resets no device it stops being configured for.
type store struct{ dir string }

// load returns the record of machine; the record of another machine, or none, is empty.
func (s store) load(machine string) ([]owned, error) {
	if s.dir == "" {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(s.dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateBytes {
		return nil, fmt.Errorf("%s: more than %d bytes", f.Name(), maxStateBytes)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it if the devices it lists are reset by hand)", f.Name(), err)
	}
	if r.Machine != machine {
		return nil, nil
	}
	return r.Devices, nil
}

// save replaces the record, atomically (a kill leaves the old or the new one).
func (s store) save(machine string, devices []owned) error {
	if s.dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(record{Machine: machine, Devices: devices}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, stateFile+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if serr := tmp.Sync(); err == nil {
		err = serr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(s.dir, stateFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("record the configured devices in %s: %w", s.dir, err)
	}
	return nil
}

// merge returns devices with each of add that is not there yet (by Config) appended, and the
// known Name and BDF of those that are filled in.
func merge(devices []owned, add ...owned) []owned {
	out := slices.Clone(devices)
	for _, a := range add {
		i := slices.IndexFunc(out, func(o owned) bool { return o.Config == a.Config })
		if i < 0 {
			out = append(out, a)
			continue
		}
		if a.Name != "" {
			out[i].Name = a.Name
		}
		if a.BDF != "" {
			out[i].BDF = a.BDF
		}
	}
	return out
}
