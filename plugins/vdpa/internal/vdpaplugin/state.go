package vdpaplugin

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ovsplane/ovsplane/plugins/api"
	"github.com/ovsplane/ovsplane/vdpa"
)

// gzipPrefix starts a state that is base64 of gzipped JSON.
const gzipPrefix = "gz:"

// encodeState returns a port's vdpa.State as Attachment.State, as JSON without the records'
// prose (What, Why: the plan's words, not needed to undo) and without records repeated by later
// ones, in the first of these forms that fits api.MaxStateSize: with the OVS shape and helper
// process; without them (a replay plans them again); that gzipped, base64-encoded and prefixed
// "gz:" (a PF with many VFs records one binding per VF). Each form decodes to a vdpa.State with
// the same records to undo, and the same state always encodes the same way, so a replay that
// changes nothing returns the same bytes. A state that fits in none is FailedPrecondition.
func encodeState(st *vdpa.State) ([]byte, error) {
	b, err := json.Marshal(compact(st, false))
	if err != nil {
		return nil, api.Errorf(api.Internal, "encode the port's state: %w", err)
	}
	if len(b) <= api.MaxStateSize {
		return b, nil
	}
	if b, err = json.Marshal(compact(st, true)); err != nil {
		return nil, api.Errorf(api.Internal, "encode the port's state: %w", err)
	}
	if len(b) <= api.MaxStateSize {
		return b, nil
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = w.Write(b)
	if err := w.Close(); err != nil {
		return nil, api.Errorf(api.Internal, "compress the port's state: %w", err)
	}
	out := []byte(gzipPrefix + base64.StdEncoding.EncodeToString(z.Bytes()))
	if len(out) > api.MaxStateSize {
		return nil, api.Errorf(api.FailedPrecondition,
			"port %s: its state records %d host changes and does not fit the %d bytes the daemon stores, even compressed: enable the PF's VFs and switchdev mode beforehand (then the port records only its own work)",
			st.Request.Name, len(st.Done), api.MaxStateSize)
	}
	return out, nil
}

// compact returns st without the records' prose and repeated records and, with dropShape,
// without the OVS shape and helper process.
func compact(st *vdpa.State, dropShape bool) *vdpa.State {
	c := *st
	if dropShape {
		c.OVS, c.Process = vdpa.OVSPlan{}, nil
	}
	c.Done = nil
	for i, s := range st.Done {
		s.What, s.Why = "", ""
		later := slices.ContainsFunc(st.Done[i+1:], func(l vdpa.Step) bool {
			return l.Op == s.Op && l.Object == s.Object && l.Driver == s.Driver && l.From == s.From && l.To == s.To
		})
		if !later { // a repeated record (a replay redid lost work) is undone once, by the later one
			c.Done = append(c.Done, s)
		}
	}
	return &c
}

// decodeState reads a state written by encodeState.
func decodeState(b []byte) (*vdpa.State, error) {
	if rest, ok := strings.CutPrefix(string(b), gzipPrefix); ok {
		z, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("compressed state: %w", err)
		}
		r, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, fmt.Errorf("compressed state: %w", err)
		}
		if b, err = io.ReadAll(io.LimitReader(r, 1<<20)); err != nil {
			return nil, fmt.Errorf("compressed state: %w", err)
		}
	}
	var st vdpa.State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	if st.Version != vdpa.StateVersion {
		return nil, fmt.Errorf("state version %d, this plugin reads version %d", st.Version, vdpa.StateVersion)
	}
	if st.Request.Name == "" || st.PF == "" {
		return nil, fmt.Errorf("state names no port or PF")
	}
	return &st, nil
}
