package ovsinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ovsplane/ovsplane/overlay/fabric"
	"github.com/ovsplane/ovsplane/plugins/api"
)

// Directory is what the installer reads from the fabric: the registered nodes and a
// version's tables (for the ordinary destinations' attachments). *fabric.Client and *Cache
// implement it.
type Directory interface {
	Nodes(ctx context.Context) ([]fabric.NodeState, error)
	Routes(ctx context.Context, version int64) (fabric.Tables, error)
}

// MaxStateBytes bounds the persisted table.
const MaxStateBytes = 4 << 20

// IsTunnelType reports whether an interface type is one the installer forwards through: a
// flow-based vxlan, geneve or gre port.
func IsTunnelType(t string) bool { return t == "vxlan" || t == "geneve" || t == "gre" }

// TunnelShape returns the options of the flow-based tunnel interface (the OVSDB shape the
// daemon writes for the plugin's overlay-tunnel port type): remote_ip=flow and key=flow, and
// dst_port when not 0. tunnelType must satisfy IsTunnelType.
func TunnelShape(tunnelType string, dstPort uint16) (map[string]string, error) {
	if !IsTunnelType(tunnelType) {
		return nil, fmt.Errorf("tunnel type %q: use vxlan, geneve or gre", tunnelType)
	}
	opts := map[string]string{"remote_ip": "flow", "key": "flow"}
	if dstPort != 0 {
		if tunnelType == "gre" {
			return nil, errors.New("dst_port: gre has no UDP port; leave it out")
		}
		opts["dst_port"] = fmt.Sprint(dstPort)
	}
	return opts, nil
}

// Config configures an Installer.
type Config struct {
	// Self is this node's name; Kind its kind.
	Self string
	Kind fabric.Kind
	// Directory reads nodes and tables. Required.
	Directory Directory
	// Local are this node's underlay addresses; Via pins next hops' addresses (see Input).
	Local []netip.Addr
	Via   map[string]netip.Addr
	// Own are this node's overlay prefixes; Prefixes the other nodes'.
	Own      []netip.Prefix
	Prefixes map[string][]netip.Prefix
	// VNI is the overlay's tun_id (0–MaxVNI).
	VNI uint32
	// StatePath, when set, is the file the installed table is kept in across restarts.
	StatePath string
	// Logger receives refusals; nil discards.
	Logger *slog.Logger
}

// Status is what an installer did; read with Installer.Status.
type Status struct {
	// Installed is the table forwarded on (Version 0: none).
	Installed Table
	// Loaded is true when Installed came from StatePath at start.
	Loaded bool
	// Installs counts tables accepted; Refused counts tables refused (the last good stays);
	// LastRefusal says why the last one was.
	Installs, Refused int
	LastRefusal       string
	// Served is the version last handed to the daemon in a FlowSet, and ServedCount how many
	// times it was; Flows the size of that set.
	Served      int64
	ServedCount int
	Flows       int
	// RenderError is why the last Flows call could not render the table ("" when it could).
	RenderError string
}

// Installer installs route tables as OpenFlow forwarding: it implements overlay/agent's
// Installer (Install) and answers the plugin's FlowProgrammer (FlowSet). Safe for concurrent
// use.
type Installer struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	st      Status
	changed chan struct{} // closed and replaced whenever Served/ServedCount change
}

// New returns an installer; with StatePath it starts from the table stored there (when valid
// and this node's), so forwarding survives a restart of the plugin while the fabric is down.
func New(cfg Config) (*Installer, error) {
	if cfg.Directory == nil {
		return nil, errors.New("ovsinstall: Config.Directory is nil: give the fabric client")
	}
	if err := CheckName(cfg.Self); err != nil {
		return nil, fmt.Errorf("ovsinstall: Config.Self: %w", err)
	}
	if cfg.Kind != fabric.KindSuper && cfg.Kind != fabric.KindOrdinary {
		return nil, fmt.Errorf("ovsinstall: Config.Kind %q: use super or ordinary", cfg.Kind)
	}
	if cfg.VNI > MaxVNI {
		return nil, fmt.Errorf("ovsinstall: Config.VNI %d: give 0–%d", cfg.VNI, MaxVNI)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	i := &Installer{cfg: cfg, log: log, changed: make(chan struct{})}
	if cfg.StatePath != "" {
		t, err := LoadTable(cfg.StatePath, cfg.Self)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			log.Warn("overlay: stored route table ignored", "path", cfg.StatePath, "err", err)
		default:
			i.st.Installed, i.st.Loaded = t, true
		}
	}
	return i, nil
}

// Status returns a snapshot.
func (i *Installer) Status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	s := i.st
	s.Installed.Hops = slices.Clone(s.Installed.Hops)
	s.Installed.Unreachable = slices.Clone(s.Installed.Unreachable)
	return s
}

// Install resolves version's table for this node (routes; the other tables of the version
// from the Directory), makes it the installed one, stores it (StatePath), and returns once
// the daemon has taken the new flows and finished the sync that writes them: a FlowSet of the
// version was served, and then another (the daemon syncs one bridge at a time, so the second
// call comes after the first set was written or refused). A refused table (ErrBadTable) or
// one that cannot render leaves the installed table as it was. ctx bounds the wait; when it
// ends first the table stays installed (the daemon takes it at its next call) and the error
// says the install is not confirmed, so the caller does not acknowledge it yet.
func (i *Installer) Install(ctx context.Context, version int64, routes map[string]string) error {
	i.mu.Lock()
	already := i.st.Installed.Version == version && version != 0 && !i.st.Loaded
	i.mu.Unlock()
	if !already {
		t, err := i.resolve(ctx, version, routes)
		if err != nil {
			if errors.Is(err, ErrBadTable) || errors.Is(err, ErrRender) {
				i.mu.Lock()
				i.st.Refused++
				i.st.LastRefusal = err.Error()
				i.mu.Unlock()
				i.log.Warn("overlay: route table refused; the last good table stays installed", "version", version, "err", err)
			}
			return err
		}
		if i.cfg.StatePath != "" {
			if err := SaveTable(i.cfg.StatePath, t); err != nil {
				i.log.Warn("overlay: cannot store the route table (forwarding continues)", "path", i.cfg.StatePath, "err", err)
			}
		}
		i.mu.Lock()
		i.st.Installed, i.st.Loaded = t, false
		i.st.Installs++
		i.mu.Unlock()
	}
	return i.waitServed(ctx, version, 2)
}

// resolve reads what Resolve needs and checks that the result renders.
func (i *Installer) resolve(ctx context.Context, version int64, routes map[string]string) (Table, error) {
	nodes, err := i.cfg.Directory.Nodes(ctx)
	if err != nil {
		return Table{}, fmt.Errorf("read the fabric's nodes: %w", err)
	}
	tables, err := i.cfg.Directory.Routes(ctx, version)
	if err != nil {
		return Table{}, fmt.Errorf("read route version %d: %w", version, err)
	}
	t, err := Resolve(Input{Self: i.cfg.Self, Kind: i.cfg.Kind, Version: version, Routes: routes, Tables: tables,
		Nodes: nodes, Local: i.cfg.Local, Via: i.cfg.Via, Dests: slices.Collect(maps.Keys(i.cfg.Prefixes))})
	if err != nil {
		return Table{}, err
	}
	if _, err := Render(t, i.params(1, api.CookieRange{})); err != nil {
		return Table{}, err
	}
	return t, nil
}

// params are the render parameters for a tunnel ofport and cookie range.
func (i *Installer) params(ofport int64, cookies api.CookieRange) Params {
	return Params{Kind: i.cfg.Kind, Own: i.cfg.Own, Prefixes: i.cfg.Prefixes, TunnelOfport: ofport, VNI: i.cfg.VNI, Cookies: cookies}
}

// waitServed waits until version was served at least n times.
func (i *Installer) waitServed(ctx context.Context, version int64, n int) error {
	for {
		i.mu.Lock()
		ok := i.st.Served == version && i.st.ServedCount >= n
		ch := i.changed
		i.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("route version %d installed but not yet taken by ovsplaned (is the bridge managed and the tunnel port ready?): %w", version, ctx.Err())
		case <-ch:
		}
	}
}

// FlowSet renders the installed table for the bridge whose tunnel port has ofport, in the
// plugin's cookie range, asking to be called again after refresh (the daemon's only way to
// pick up a new version). No table yet gives only the rule dropping what the tunnel brings.
// An error (the table does not render) leaves the daemon's current flows in place.
func (i *Installer) FlowSet(ofport int64, cookies api.CookieRange, refreshMillis uint32) (api.FlowSet, error) {
	i.mu.Lock()
	t := i.st.Installed
	i.mu.Unlock()
	flows, err := Render(t, i.params(ofport, cookies))
	i.mu.Lock()
	defer i.mu.Unlock()
	if err != nil {
		i.st.RenderError = err.Error()
		return api.FlowSet{}, err
	}
	i.st.RenderError = ""
	if i.st.Served != t.Version {
		i.st.Served, i.st.ServedCount = t.Version, 0
	}
	i.st.ServedCount++
	i.st.Flows = len(flows)
	close(i.changed)
	i.changed = make(chan struct{})
	return api.FlowSet{Flows: flows, RefreshMillis: refreshMillis}, nil
}

// SaveTable writes t to path atomically and durably: a temporary file, synced, renamed over
// path, and then the directory synced so that the rename survives a crash.
func SaveTable(path string, t Table) error {
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode route table: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".overlay-table-*")
	if err != nil {
		return fmt.Errorf("store route table: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("store route table: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store route table: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store route table: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("store route table: %w", err)
	}
	// The rename is durable only once the directory is: a crash could otherwise bring back the
	// previous table (or none).
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("store route table: sync directory: %w", err)
	}
	defer dir.Close()
	if err := dir.Sync(); err != nil {
		return fmt.Errorf("store route table: sync directory %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// LoadTable reads a table stored by SaveTable and checks it: at most MaxStateBytes, this
// node's, names and addresses valid, destinations sorted and unique.
func LoadTable(path, self string) (Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return Table{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxStateBytes+1))
	if err != nil {
		return Table{}, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxStateBytes {
		return Table{}, fmt.Errorf("%s: more than %d bytes", path, MaxStateBytes)
	}
	var t Table
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Table{}, fmt.Errorf("%s: %w", path, err)
	}
	if t.Node != self || t.Version < 1 || t.Version > fabric.MaxVersion {
		return Table{}, fmt.Errorf("%s: table of node %q version %d, not this node's (%s)", path, t.Node, t.Version, self)
	}
	for k, h := range t.Hops {
		if CheckName(h.Dest) != nil || CheckName(h.NextHop) != nil || !h.Underlay.IsValid() || h.Cost < 0 ||
			(k > 0 && t.Hops[k-1].Dest >= h.Dest) {
			return Table{}, fmt.Errorf("%s: hop %d (%s via %s) is invalid", path, k, h.Dest, h.NextHop)
		}
	}
	return t, nil
}

// Cache is a Directory (and an overlay/agent Fabric) in front of the fabric client that keeps
// the tables of the last version read, so that the installer reads the directory of the
// version the agent just fetched without a second read.
type Cache struct {
	// Fabric is the fabric client all calls go to.
	*fabric.Client

	mu      sync.Mutex
	version int64
	tables  fabric.Tables
}

// NewCache returns a cache in front of c.
func NewCache(c *fabric.Client) *Cache { return &Cache{Client: c} }

// Routes returns version's tables, from the cache when it holds that version.
func (c *Cache) Routes(ctx context.Context, version int64) (fabric.Tables, error) {
	c.mu.Lock()
	if c.version == version && c.tables != nil {
		t := c.tables
		c.mu.Unlock()
		return t, nil
	}
	c.mu.Unlock()
	t, err := c.Client.Routes(ctx, version)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.version, c.tables = version, t
	c.mu.Unlock()
	return t, nil
}
