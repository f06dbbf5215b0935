package ovsproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds of what an Open vSwitch daemon's unixctl socket may send back. ovs-vswitchd 3.1
// answers list-commands with about 6 KiB and 140 commands (the DPDK build a few more).
const (
	// MaxUnixctlReply bounds one reply, in bytes (the JSON text, result included).
	MaxUnixctlReply = 1 << 20
	// MaxAppctlCommands bounds the commands ParseCommandList accepts.
	MaxAppctlCommands = 4096
	// MaxAppctlCommandLen bounds the length of one command name.
	MaxAppctlCommandLen = 128
	// unixctlTimeout bounds a Call whose ctx has no deadline.
	unixctlTimeout = 5 * time.Second
)

// UnixctlError is a daemon's refusal of a unixctl command (the JSON-RPC "error" of its
// reply): an unknown command, bad arguments, or the command's own failure.
type UnixctlError struct {
	Method  string
	Message string
}

func (e *UnixctlError) Error() string {
	return fmt.Sprintf("unixctl %s: %s", e.Method, e.Message)
}

var unixctlIDs atomic.Int64

// Unixctl sends one command to the unixctl socket at path (what `ovs-appctl -t path method
// args…` does) and returns the daemon's text reply. It speaks the daemon's JSON-RPC 1.0
// directly: one connection, one request whose params are args as JSON strings (so no argument
// is ever parsed as shell or command-line text), one reply of at most MaxUnixctlReply bytes.
// The call ends with ctx, or after 5 s when ctx has no deadline. A refused command is a
// *UnixctlError; other errors name the socket.
func Unixctl(ctx context.Context, path, method string, args ...string) (string, error) {
	if method == "" {
		return "", errors.New("unixctl: empty command")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, unixctlTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return "", fmt.Errorf("unixctl %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if args == nil {
		args = []string{}
	}
	id := unixctlIDs.Add(1)
	req, err := json.Marshal(struct {
		Method string   `json:"method"`
		Params []string `json:"params"`
		ID     int64    `json:"id"`
	}{method, args, id})
	if err != nil {
		return "", fmt.Errorf("unixctl %s %s: %w", path, method, err)
	}
	if _, err := conn.Write(req); err != nil {
		return "", unixctlIOError(ctx, path, method, err)
	}
	reply, err := readReply(conn)
	if err != nil {
		return "", unixctlIOError(ctx, path, method, err)
	}
	return decodeReply(reply, method, id)
}

// unixctlIOError names the socket and the command, and says when ctx ended the call. The
// connection's deadline is ctx's, and it can fire a moment before ctx's own timer has set
// ctx.Err(): an I/O timeout is then reported as ctx's deadline too.
func unixctlIOError(ctx context.Context, path, method string, err error) error {
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return fmt.Errorf("unixctl %s %s: %w", path, method, err)
}

// readReply reads one JSON object from r, at most MaxUnixctlReply bytes; the daemon sends
// nothing after it.
func readReply(r io.Reader) (json.RawMessage, error) {
	lr := &capReader{r: r, left: MaxUnixctlReply}
	dec := json.NewDecoder(lr)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if lr.hit {
			return nil, fmt.Errorf("reply longer than %d bytes", MaxUnixctlReply)
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("connection closed before a reply: %w", io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	return raw, nil
}

// capReader reads at most left bytes from r, then reports EOF and sets hit.
type capReader struct {
	r    io.Reader
	left int
	hit  bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.hit = true
		return 0, io.EOF
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

// decodeReply checks a JSON-RPC reply to request id and returns its result text, or the
// daemon's error as a *UnixctlError.
func decodeReply(raw []byte, method string, id int64) (string, error) {
	if len(raw) > MaxUnixctlReply {
		return "", fmt.Errorf("unixctl %s: reply longer than %d bytes", method, MaxUnixctlReply)
	}
	var rep struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return "", fmt.Errorf("unixctl %s: malformed reply: %w", method, err)
	}
	if got := string(bytes.TrimSpace(rep.ID)); got != strconv.FormatInt(id, 10) {
		return "", fmt.Errorf("unixctl %s: reply to request %.40q, want %d", method, got, id)
	}
	if e := bytes.TrimSpace(rep.Error); len(e) > 0 && string(e) != "null" {
		var msg string
		if err := json.Unmarshal(e, &msg); err != nil {
			msg = string(e) // not a string: quote the JSON as it came
		}
		return "", &UnixctlError{Method: method, Message: strings.TrimSpace(msg)}
	}
	var result string
	if err := json.Unmarshal(rep.Result, &result); err != nil {
		return "", fmt.Errorf("unixctl %s: the result is not a string: %w", method, err)
	}
	return result, nil
}

// commandListHead is the first line of ovs-vswitchd's list-commands reply.
const commandListHead = "The available commands are:"

// ParseCommandList returns the command names of a `list-commands` reply ("The available
// commands are:" and then one command a line: two spaces, its name, its usage), in the
// daemon's order. It refuses text without that heading, more than MaxAppctlCommands commands,
// and names longer than MaxAppctlCommandLen or holding bytes other than letters, digits and
// "/-_.:"; a name listed twice is kept once.
func ParseCommandList(text string) ([]string, error) {
	rest, ok := strings.CutPrefix(text, commandListHead)
	if !ok {
		return nil, fmt.Errorf("list-commands: the reply does not start with %q: %.60q", commandListHead, text)
	}
	var names []string
	seen := map[string]bool{}
	for n, line := range strings.Split(rest, "\n") {
		if n == 0 {
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("list-commands: unexpected text after the heading: %.60q", line)
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := fields[0]
		if err := checkCommandName(name); err != nil {
			return nil, fmt.Errorf("list-commands: line %d: %w", n+1, err)
		}
		if seen[name] {
			continue
		}
		if len(names) == MaxAppctlCommands {
			return nil, fmt.Errorf("list-commands: more than %d commands", MaxAppctlCommands)
		}
		seen[name] = true
		names = append(names, name)
	}
	return names, nil
}

func checkCommandName(name string) error {
	if len(name) > MaxAppctlCommandLen {
		return fmt.Errorf("command name of %d bytes (at most %d): %.40q…", len(name), MaxAppctlCommandLen, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/-_.:", c) >= 0) {
			return fmt.Errorf("command name %q holds byte %q", name, c)
		}
	}
	return nil
}

// AppctlCommands returns the command names of `list-commands` at the unixctl socket ctl
// (see Unixctl and ParseCommandList).
func AppctlCommands(ctx context.Context, ctl string) ([]string, error) {
	out, err := Unixctl(ctx, ctl, "list-commands")
	if err != nil {
		return nil, err
	}
	return ParseCommandList(out)
}

// maxPidfile bounds the pidfile VswitchdCtl reads.
const maxPidfile = 64

// VswitchdCtl returns the unixctl socket of the ovs-vswitchd whose run directory is runDir:
// <runDir>/ovs-vswitchd.<pid>.ctl, with the pid from <runDir>/ovs-vswitchd.pid (where
// ovs-vswitchd puts its socket unless told otherwise, and where `ovs-appctl -t ovs-vswitchd`
// looks), else <runDir>/ovs-vswitchd.ctl (Layout's --unixctl). The path must be a socket;
// the error says what was looked for.
func VswitchdCtl(runDir string) (string, error) {
	if runDir == "" {
		return "", errors.New("ovs-vswitchd's unixctl socket: no run directory")
	}
	var tried []string
	if pid, err := readPidfile(filepath.Join(runDir, VswitchdName+".pid")); err == nil {
		p := filepath.Join(runDir, VswitchdName+"."+strconv.Itoa(pid)+".ctl")
		if isSocket(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	p := filepath.Join(runDir, VswitchdName+".ctl")
	if isSocket(p) {
		return p, nil
	}
	tried = append(tried, p)
	return "", fmt.Errorf("ovs-vswitchd's unixctl socket: none of %s is a socket (is ovs-vswitchd running with its run directory %s?)", strings.Join(tried, ", "), runDir)
}

// readPidfile returns the process id an OVS pidfile holds.
func readPidfile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, maxPidfile)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pidfile %s: no process id", path)
	}
	return pid, nil
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Type() == fs.ModeSocket
}

// VswitchdPID returns the process id in <runDir>/ovs-vswitchd.pid: the ovs-vswitchd running
// now, so that a caller can tell a restart (the id changed) from the same process.
func VswitchdPID(runDir string) (int, error) {
	if runDir == "" {
		return 0, errors.New("ovs-vswitchd's pidfile: no run directory")
	}
	return readPidfile(filepath.Join(runDir, VswitchdName+".pid"))
}
