// Package sysfs gives rooted access to the kernel's pseudo filesystems (/sys, /dev, /proc) for the
// hardware libraries (vdpa, dsa): every path is relative to a root directory chosen by the caller ("/" on a host, a
// materialised fixture tree in tests), and no path may climb out of it.
//
// Root holds no state besides its directory, so one value may be shared between goroutines. Writes
// go straight to the file with a single write(2), which is how sysfs attributes must be written:
// the kernel's store handler sees the whole value at once and its errno comes back unchanged.
package sysfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Root is a directory that stands for "/" of the machine being inspected.
type Root struct {
	dir string
}

// New returns a Root over dir. dir is made absolute; it is not checked for existence.
func New(dir string) *Root {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Root{dir: dir}
}

// Dir is the directory the root stands for.
func (r *Root) Dir() string { return r.dir }

// Path maps a root-relative slash path ("sys/bus/pci/devices") to a host path below Dir. It fails
// for absolute paths and for paths that leave the root after cleaning.
func (r *Root) Path(p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("sysfs: %q: path must be relative to the root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("sysfs: %q: path leaves the root", p)
	}
	return filepath.Join(r.dir, filepath.FromSlash(c)), nil
}

// MaxFileBytes bounds the file ReadFile reads. A sysfs attribute is at most one page (4 KiB on
// x86); the bound leaves room for larger pages and refuses a regular file that is not one.
const MaxFileBytes = 64 << 10

// ReadFile returns an attribute's content with trailing newlines and spaces removed. It reads
// at most MaxFileBytes+1 bytes and refuses a longer file with an error naming it; it never
// reads a whole large file into memory first.
func (r *Root) ReadFile(p string) (string, error) {
	hp, err := r.Path(p)
	if err != nil {
		return "", err
	}
	f, err := os.Open(hp)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxFileBytes {
		return "", fmt.Errorf("sysfs: %q: larger than %d bytes, not a sysfs attribute (is the root %s the right directory?)", p, MaxFileBytes, r.dir)
	}
	return strings.TrimRight(string(b), "\n "), nil
}

// ReadLink returns a symbolic link's target as stored (usually relative, as sysfs writes them).
func (r *Root) ReadLink(p string) (string, error) {
	hp, err := r.Path(p)
	if err != nil {
		return "", err
	}
	return os.Readlink(hp)
}

// ReadDir returns the names in a directory, sorted.
func (r *Root) ReadDir(p string) ([]string, error) {
	hp, err := r.Path(p)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(hp)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

// Stat follows symbolic links, as opening the path would.
func (r *Root) Stat(p string) (fs.FileInfo, error) {
	hp, err := r.Path(p)
	if err != nil {
		return nil, err
	}
	return os.Stat(hp)
}

// WriteFile writes value to an existing attribute in one write call. It never creates files: a
// missing attribute is reported as fs.ErrNotExist, as the kernel would.
func (r *Root) WriteFile(p, value string) error {
	hp, err := r.Path(p)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(hp, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(value))
	cerr := f.Close()
	return errors.Join(werr, cerr)
}

// Chown changes the owner and group of the file at p (following symbolic links, as chown(2)
// does), for device nodes such as /dev/dsa/wq0.0 that another account must open.
func (r *Root) Chown(p string, uid, gid int) error {
	hp, err := r.Path(p)
	if err != nil {
		return err
	}
	return os.Chown(hp, uid, gid)
}

// Chmod changes the permission bits of the file at p (following symbolic links).
func (r *Root) Chmod(p string, mode fs.FileMode) error {
	hp, err := r.Path(p)
	if err != nil {
		return err
	}
	return os.Chmod(hp, mode)
}

// Resolve follows the symbolic link at p (relative targets are taken from its directory) and
// returns the root-relative path it names. Only one level is followed.
func (r *Root) Resolve(p string) (string, error) {
	t, err := r.ReadLink(p)
	if err != nil {
		return "", err
	}
	return Join(p, t)
}

// Join resolves a link target t found at root-relative path p into a root-relative path.
// Absolute targets are taken relative to the root.
func Join(p, t string) (string, error) {
	var j string
	if strings.HasPrefix(t, "/") {
		j = path.Clean(strings.TrimPrefix(t, "/"))
	} else {
		j = path.Join(path.Dir(p), t)
	}
	if j == ".." || strings.HasPrefix(j, "../") {
		return "", fmt.Errorf("sysfs: link %s -> %s leaves the root", p, t)
	}
	return j, nil
}
