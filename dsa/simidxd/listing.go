package simidxd

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// maxListed bounds the entries Listing walks, so a tree someone filled by mistake cannot make it
// run away.
const maxListed = 100000

// Listing returns the simulated machine as canonical text, one entry a line in path order
// (the simulator's own .simidxd directory left out):
//
//	dir  sys/bus/dsa/devices
//	file 0444 sys/devices/.../dsa0/state "disabled\n"
//	file 0600 dev/dsa/wq0.0 (4096 bytes)
//	link sys/bus/dsa/devices/dsa0 -> ../../../devices/pci0000:6a/0000:6a:01.0/dsa0
//
// Values are Go-quoted; files over 256 bytes show their size only. Tests compare listings before
// and after an operation and against golden files.
func (s *Sim) Listing() (string, error) {
	unlock, err := s.lock(syscall.LOCK_SH)
	if err != nil {
		return "", err
	}
	defer unlock()
	var b strings.Builder
	n := 0
	err = filepath.WalkDir(s.dir, func(hp string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.dir, hp)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == stateDir {
			return filepath.SkipDir
		}
		if n++; n > maxListed {
			return fmt.Errorf("more than %d entries", maxListed)
		}
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(hp)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "link %s -> %s\n", rel, t)
		case e.IsDir():
			fmt.Fprintf(&b, "dir  %s\n", rel)
		default:
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if fi.Size() > 256 {
				fmt.Fprintf(&b, "file %04o %s (%d bytes)\n", fi.Mode().Perm(), rel, fi.Size())
				return nil
			}
			v, err := os.ReadFile(hp)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "file %04o %s %s\n", fi.Mode().Perm(), rel, strconv.Quote(string(v)))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("simidxd: listing %s: %w", s.dir, err)
	}
	return b.String(), nil
}
