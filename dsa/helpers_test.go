package dsa_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ovsplane/ovsplane/dsa"
	"github.com/ovsplane/ovsplane/internal/sysfs"
)

// The library runs on a host over internal/sysfs.Root.
var _ dsa.FS = (*sysfs.Root)(nil)

func newHost(t *testing.T, f dsa.FS) *dsa.Host {
	t.Helper()
	h, err := dsa.New(dsa.Config{FS: f})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tree writes files (path → content; a content starting with "->" makes a symbolic link to the
// rest) under dir.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(c, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(c+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// sprFiles is a small hand-written 4th-gen Xeon tree: dsa0 at 0000:6a:01.0 on NUMA node 0 with
// two engines, one group and four work queues, disabled, on a 6.7+ kernel. It stands apart
// from simidxd so that Discover is also checked against a layout written from the ABI document.
func sprFiles() map[string]string {
	pci := "sys/devices/pci0000:6a/0000:6a:01.0"
	d := pci + "/dsa0"
	f := map[string]string{
		pci + "/vendor":                      "0x8086",
		pci + "/device":                      "0x0b25",
		pci + "/numa_node":                   "0",
		pci + "/driver":                      "->../../../bus/pci/drivers/idxd",
		pci + "/iommu_group":                 "->../../../kernel/iommu_groups/7",
		"sys/bus/pci/drivers/idxd/":          "",
		"sys/kernel/iommu_groups/7/":         "",
		"sys/bus/pci/devices/0000:6a:01.0":   "->../../../devices/pci0000:6a/0000:6a:01.0",
		d + "/version":                       "0x100",
		d + "/max_groups":                    "1",
		d + "/max_engines":                   "2",
		d + "/max_work_queues":               "4",
		d + "/max_work_queues_size":          "128",
		d + "/max_batch_size":                "1024",
		d + "/max_transfer_size":             "2147483648",
		d + "/numa_node":                     "0",
		d + "/pasid_enabled":                 "1",
		d + "/state":                         "disabled",
		d + "/configurable":                  "1",
		d + "/clients":                       "0",
		d + "/cmd_status":                    "0",
		d + "/group0.0/":                     "",
		"sys/bus/dsa/devices/dsa0":           "->../../../devices/pci0000:6a/0000:6a:01.0/dsa0",
		"sys/bus/dsa/drivers/idxd/bind":      "",
		"sys/bus/dsa/drivers/user/bind":      "",
		"sys/bus/dsa/drivers/dmaengine/bind": "",
		"dev/dsa/":                           "",
	}
	for _, e := range []string{"engine0.0", "engine0.1"} {
		f[d+"/"+e+"/group_id"] = "-1"
	}
	for _, q := range []string{"wq0.0", "wq0.1", "wq0.2", "wq0.3"} {
		w := d + "/" + q
		for k, v := range map[string]string{"mode": "dedicated", "type": "none", "name": "", "driver_name": "",
			"state": "disabled", "size": "0", "priority": "0", "group_id": "-1", "max_batch_size": "1024",
			"max_transfer_size": "2097152", "ats_disable": "0", "threshold": "0", "clients": "0"} {
			f[w+"/"+k] = v
		}
		f["sys/bus/dsa/devices/"+q] = "->../../../devices/pci0000:6a/0000:6a:01.0/dsa0/" + q
	}
	return f
}

// recFS wraps an FS: it counts changes, can fail every change after the first `after`, and can
// fail or swallow changes to chosen paths.
type recFS struct {
	dsa.FS
	mu      sync.Mutex
	changes []string
	after   int // fail changes once this many succeeded (<0: never)
	fail    map[string]error
	swallow map[string]bool
}

func wrap(f dsa.FS) *recFS { return &recFS{FS: f, after: -1} }

var errCrash = errors.New("simulated crash")

func (r *recFS) change(p, what string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.after >= 0 && len(r.changes) >= r.after {
		return false, errCrash
	}
	for suffix, err := range r.fail {
		if strings.HasSuffix(p, suffix) {
			return false, &fs.PathError{Op: "write", Path: p, Err: err}
		}
	}
	for suffix := range r.swallow {
		if strings.HasSuffix(p, suffix) {
			return false, nil
		}
	}
	r.changes = append(r.changes, what)
	return true, nil
}

func (r *recFS) WriteFile(p, v string) error {
	if ok, err := r.change(p, p+"="+v); !ok {
		return err
	}
	return r.FS.WriteFile(p, v)
}

func (r *recFS) Chown(p string, uid, gid int) error {
	if ok, err := r.change(p, "chown "+p); !ok {
		return err
	}
	return r.FS.Chown(p, uid, gid)
}

func (r *recFS) Chmod(p string, m fs.FileMode) error {
	if ok, err := r.change(p, "chmod "+p); !ok {
		return err
	}
	return r.FS.Chmod(p, m)
}

func (r *recFS) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.changes)
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code dsa.Code) *dsa.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	var e *dsa.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
	return e
}
