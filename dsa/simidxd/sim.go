package simidxd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// stateDir holds the simulator's own files (spec, lock, temporary files, PCI dynamic IDs); it
// is not part of the simulated machine.
const stateDir = ".simidxd"

// maxWrite bounds one attribute write, as sysfs bounds a store to a page.
const maxWrite = 4096

// Sim is a simulated idxd kernel over a directory. It implements dsa.FS. It holds no mutable
// state, so any number of values (in any number of processes) may share one directory.
type Sim struct {
	root *sysfs.Root
	dir  string
	spec spec
}

// Open returns a simulator over a tree made by Write.
func Open(dir string) (*Sim, error) {
	root := sysfs.New(dir)
	b, err := os.ReadFile(filepath.Join(root.Dir(), stateDir, "spec.json"))
	if err != nil {
		return nil, fmt.Errorf("simidxd: %s is not a simulated host (make one with Write): %w", dir, err)
	}
	var sp spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, fmt.Errorf("simidxd: %s: bad %s/spec.json: %w", dir, stateDir, err)
	}
	if err := sp.check(); err != nil {
		return nil, fmt.Errorf("simidxd: %s: %s/spec.json: %w (rewrite the host with Write)", dir, stateDir, err)
	}
	return &Sim{root: root, dir: root.Dir(), spec: sp}, nil
}

// Dir is the directory standing for the machine's "/".
func (s *Sim) Dir() string { return s.dir }

// Variant is the variant the tree was written as.
func (s *Sim) Variant() Variant { return s.spec.Variant }

// ---- dsa.FS ----

// ReadFile implements dsa.FS: the attribute with trailing newlines and spaces removed. Reading
// a write-only attribute fails with EACCES, cdev_minor of a WQ without a character device with
// ENXIO and enqcmds_retries of a dedicated WQ with EOPNOTSUPP, as on the kernel.
func (s *Sim) ReadFile(p string) (string, error) {
	hp, err := s.root.Path(p)
	if err != nil {
		return "", err
	}
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := s.inside("open", p, hp); err != nil {
		return "", err
	}
	fi, err := os.Stat(hp)
	if err != nil {
		return "", err
	}
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o444 == 0 {
		return "", &fs.PathError{Op: "open", Path: p, Err: syscall.EACCES}
	}
	b, err := os.ReadFile(hp)
	if err != nil {
		return "", err
	}
	if rel, ok := s.real(hp); ok {
		if errno := s.readRule(rel, string(b)); errno != 0 {
			return "", &fs.PathError{Op: "read", Path: p, Err: errno}
		}
	}
	return strings.TrimRight(string(b), "\n "), nil
}

// readRule is the show handlers' refusals.
func (s *Sim) readRule(rel, content string) syscall.Errno {
	dir, attr := path.Split(rel)
	switch attr {
	case "cdev_minor":
		if content == "" {
			return syscall.ENXIO
		}
	case "enqcmds_retries":
		if s.read(dir+"mode") == "dedicated" {
			return syscall.EOPNOTSUPP
		}
	}
	return 0
}

// ReadLink implements dsa.FS.
func (s *Sim) ReadLink(p string) (string, error) {
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return "", err
	}
	defer unlock()
	return s.root.ReadLink(p)
}

// ReadDir implements dsa.FS.
func (s *Sim) ReadDir(p string) ([]string, error) {
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if hp, err := s.root.Path(p); err != nil {
		return nil, err
	} else if err := s.inside("open", p, hp); err != nil {
		return nil, err
	}
	return s.root.ReadDir(p)
}

// Stat implements dsa.FS. It follows links; the regular files standing for device nodes under
// dev/dsa and dev/vfio are reported as character devices with their permission bits.
func (s *Sim) Stat(p string) (fs.FileInfo, error) {
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if hp, err := s.root.Path(p); err != nil {
		return nil, err
	} else if err := s.inside("stat", p, hp); err != nil {
		return nil, err
	}
	fi, err := s.root.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return fi, err
	}
	c := path.Clean(p)
	if strings.HasPrefix(c, "dev/dsa/") || strings.HasPrefix(c, "dev/vfio/") {
		return charDev{fi}, nil
	}
	return fi, nil
}

type charDev struct{ fs.FileInfo }

func (c charDev) Mode() fs.FileMode {
	return fs.ModeDevice | fs.ModeCharDevice | c.FileInfo.Mode().Perm()
}

// WriteFile implements dsa.FS with the kernel's store semantics: the refusal comes back as a
// *fs.PathError holding the syscall.Errno the kernel's write(2) returns. A missing attribute is
// ENOENT, a read-only one EACCES, a value over 4096 bytes EINVAL.
func (s *Sim) WriteFile(p, value string) error {
	hp, err := s.root.Path(p)
	if err != nil {
		return err
	}
	unlock, err := s.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	errno := s.write(hp, value)
	if errno != 0 {
		return &fs.PathError{Op: "write", Path: p, Err: errno}
	}
	return nil
}

func (s *Sim) write(hp, value string) syscall.Errno {
	fi, err := os.Stat(hp)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		return syscall.ENOENT
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if fi.Mode().Perm()&0o222 == 0 {
		return syscall.EACCES
	}
	rel, ok := s.real(hp)
	if !ok {
		return syscall.EACCES
	}
	if len(value) > maxWrite {
		return syscall.EINVAL
	}
	return s.store(rel, value)
}

// Chown implements dsa.FS for device nodes: paths outside dev/ are refused with EPERM.
func (s *Sim) Chown(p string, uid, gid int) error {
	hp, err := s.devPath("chown", p)
	if err != nil {
		return err
	}
	unlock, err := s.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.inside("chown", p, hp); err != nil {
		return err
	}
	return os.Chown(hp, uid, gid)
}

// Chmod implements dsa.FS for device nodes: paths outside dev/ are refused with EPERM.
func (s *Sim) Chmod(p string, mode fs.FileMode) error {
	hp, err := s.devPath("chmod", p)
	if err != nil {
		return err
	}
	unlock, err := s.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.inside("chmod", p, hp); err != nil {
		return err
	}
	return os.Chmod(hp, mode.Perm())
}

func (s *Sim) devPath(op, p string) (string, error) {
	hp, err := s.root.Path(p)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(path.Clean(p), "dev/") {
		return "", &fs.PathError{Op: op, Path: p, Err: syscall.EPERM}
	}
	return hp, nil
}

// SetClients sets how many processes hold a WQ open (name "wqN.M", which must be enabled) and
// updates its device's clients total, as opening /dev/dsa/wqN.M does on a real host. For a device
// (name "dsaN") the count goes to its first enabled WQ and the other WQs' counts are cleared, so
// the device's total becomes n. n must be within 0..65536.
func (s *Sim) SetClients(name string, n int) error {
	if n < 0 || n > 65536 {
		return fmt.Errorf("simidxd: clients %d for %s: want 0..65536", n, name)
	}
	unlock, err := s.lock(syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	d, kind, idx := s.lookup(name)
	if d == nil || !s.exists(d.dir()) || (kind != "wq" && kind != "dsa") {
		return fmt.Errorf("simidxd: no WQ or device %q on the dsa bus", name)
	}
	if kind == "wq" {
		if s.read(d.subDir("wq", idx)+"/state") != "enabled" {
			return fmt.Errorf("simidxd: %s is not enabled, so no process can hold it open", name)
		}
		return s.errnoErr(name, s.setClients(d, idx, n))
	}
	first := -1
	for i := range d.MaxWQs {
		if s.read(d.subDir("wq", i)+"/state") != "enabled" {
			continue
		}
		v := 0
		if first < 0 {
			first, v = i, n
		}
		if errno := s.setClients(d, i, v); errno != 0 {
			return s.errnoErr(name, errno)
		}
	}
	if first < 0 && n > 0 {
		return fmt.Errorf("simidxd: %s has no enabled WQ to hold clients", name)
	}
	return nil
}

func (s *Sim) errnoErr(name string, errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return fmt.Errorf("simidxd: %s: %w", name, errno)
}

// ---- locking and files (callers of the helpers below hold the lock) ----

// lock takes an flock on the state directory's lock file; the returned function releases it.
func (s *Sim) lock(how int) (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, stateDir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("simidxd: lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("simidxd: lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// inside refuses, with EACCES, a path whose links lead out of the root (a path that does not
// resolve is left to the operation itself to report).
func (s *Sim) inside(op, p, hp string) error {
	if _, err := filepath.EvalSymlinks(hp); err != nil {
		return nil
	}
	if _, ok := s.real(hp); !ok {
		return &fs.PathError{Op: op, Path: p, Err: syscall.EACCES}
	}
	return nil
}

// real resolves a host path through its links and returns it relative to the root, or false
// when it leaves the root.
func (s *Sim) real(hp string) (string, bool) {
	r, err := filepath.EvalSymlinks(hp)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(s.dir, r)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func (s *Sim) host(p string) string { return filepath.Join(s.dir, filepath.FromSlash(p)) }

func (s *Sim) exists(p string) bool {
	_, err := os.Lstat(s.host(p))
	return err == nil
}

// read returns an attribute without its trailing newline ("" when absent).
func (s *Sim) read(p string) string {
	b, err := os.ReadFile(s.host(p))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// put replaces the file at p with content, keeping its mode (mode when it is new), by rename so
// that a reader without the lock never sees half a value.
func (s *Sim) put(p, content string, mode fs.FileMode) error {
	hp := s.host(p)
	if fi, err := os.Lstat(hp); err == nil {
		if fi.Mode().IsRegular() && fi.Size() == int64(len(content)) {
			if b, err := os.ReadFile(hp); err == nil && string(b) == content {
				return nil // unchanged: keep the file (and its inode) as it is
			}
		}
		mode = fi.Mode().Perm()
	} else if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(s.dir, stateDir), "tmp-")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), mode)); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), hp); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// set writes an existing attribute's value (a line), keeping its mode.
func (s *Sim) set(p, v string) error { return s.put(p, v+"\n", 0o644) }

// setIfExists writes an attribute only when the kernel variant has it.
func (s *Sim) setIfExists(p, v string) error {
	if !s.exists(p) {
		return nil
	}
	return s.set(p, v)
}

// link makes p a symbolic link to the root-relative target, written relative as sysfs does.
func (s *Sim) link(p, target string) error {
	if err := os.MkdirAll(filepath.Dir(s.host(p)), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.FromSlash(path.Dir(p)), filepath.FromSlash(target))
	if err != nil {
		return err
	}
	_ = os.Remove(s.host(p))
	return os.Symlink(filepath.ToSlash(rel), s.host(p))
}

func (s *Sim) remove(p string) error { return os.RemoveAll(s.host(p)) }

// linkBase is the last element of a link's target ("" when p is not a link).
func (s *Sim) linkBase(p string) string {
	t, err := os.Readlink(s.host(p))
	if err != nil {
		return ""
	}
	return path.Base(t)
}
