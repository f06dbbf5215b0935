package config

import (
	"errors"

	"github.com/ovsplane/ovsplane/model/limits"
)

// This file applies the bounds and text rules of package limits to the desired state: the
// configuration file, API requests (ValidateBridge, ValidatePort) and plugins' port shapes all
// pass here, so a request refused at one door is refused at every door, with the same message.

// pathError is a problem found at a key path. It keeps the problem (an *limits.Error for
// limits) for errors.Is and errors.As.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// addErr records err (nil is ignored) at path.
func (v *validator) addErr(path string, err error) {
	if err != nil {
		v.errs = append(v.errs, &pathError{path: path, err: err})
	}
}

// limitMap checks one map column of an object with limits.CheckMap. The empty key is left to
// checkMap, which has its own message for it.
func limitMap(v *validator, path string, owner string, column string, m map[string]string) {
	if len(m) > limits.MaxMapEntries {
		v.addErr(path, limits.CheckMap(owner, column, m))
		return
	}
	if _, hasEmpty := m[""]; hasEmpty {
		rest := make(map[string]string, len(m))
		for k, val := range m {
			if k != "" {
				rest[k] = val
			}
		}
		m = rest
	}
	var p limits.Problems
	limits.CheckMapInto(&p, owner, column, m)
	v.addErr(path, p.Err())
}

// countObjects returns the bridges, ports and interfaces of c.
func (c *Config) countObjects() int {
	n := len(c.Bridges)
	for _, b := range c.Bridges {
		n += len(b.Ports)
		for _, p := range b.Ports {
			n += len(p.Interfaces)
		}
	}
	return n
}

// checkedAlone renders a problem of ValidateBridge or ValidatePort: a limits problem names its
// object itself, so it is returned as it is (errors.As finds its *limits.Error); any other
// problem gets the path renamed by rename.
func checkedAlone(err error, rename func(string) string) error {
	var pe *pathError
	var le *limits.Error
	if errors.As(err, &pe) && errors.As(pe.err, &le) && le.Object != "" {
		return pe.err
	}
	msg := rename(err.Error())
	if msg == err.Error() {
		return err
	}
	return &renamed{msg: msg, err: err}
}

// renamed is an error whose message was rewritten; Unwrap keeps the original for errors.Is.
type renamed struct {
	msg string
	err error
}

func (e *renamed) Error() string { return e.msg }
func (e *renamed) Unwrap() error { return e.err }

// tooManyInterfaces reports a port over limits.MaxInterfacesPerPort. Its interfaces are then
// not checked one by one: a 100,000-interface port gets one line, at once.
func tooManyInterfaces(v *validator, pp string, p Port) bool {
	err := limits.CheckInterfaces(limits.Object(limits.Port, p.Name), len(p.Interfaces))
	v.addErr(pp+".interfaces", err)
	if err == nil {
		portTooBig(v, pp, p)
	}
	return err != nil
}

// portTooBig reports a port whose names, keys and values exceed limits.MaxPortBytes.
func portTooBig(v *validator, pp string, p Port) {
	n := len(p.Name) + limits.MapBytes(p.OtherConfig) + limits.MapBytes(p.ExternalIDs)
	for _, in := range p.Interfaces {
		n += len(in.Name) + len(in.Type) + limits.MapBytes(in.Options) + limits.MapBytes(in.OtherConfig) + limits.MapBytes(in.ExternalIDs)
	}
	v.addErr(pp, limits.CheckPortBytes(limits.Object(limits.Port, p.Name), n))
}

// tooManyObjects reports a configuration over limits.MaxObjectsPerRequest.
func (c *Config) tooManyObjects(v *validator) bool {
	err := limits.CheckObjects("configuration", c.countObjects())
	v.addErr("bridges", err)
	return err != nil
}
