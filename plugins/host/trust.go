package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ovsplane/ovsplane/model"
)

// ErrRefused is wrapped by every refusal to start a plugin: a binary that fails the trust
// checks (symlink, permissions, owner, SHA-256 pin), speaks another protocol version, or calls
// itself (Info.Name) by another name than its config entry's. The
// host starts no process for a binary that fails the trust checks, and does not retry a
// refused plugin until Reload or Reset.
var ErrRefused = errors.New("refused")

// refusal is a trust or version failure: the plugin's name, the file and what to do.
type refusal struct {
	plugin string
	msg    string
}

func (r *refusal) Error() string { return fmt.Sprintf("plugin %q refused: %s", r.plugin, r.msg) }
func (r *refusal) Unwrap() error { return ErrRefused }

func refuse(plugin, format string, args ...any) error {
	return &refusal{plugin: plugin, msg: fmt.Sprintf(format, args...)}
}

// trusted is a binary that passed verify.
type trusted struct {
	path   string // absolute, inside the plugin dir
	sha256 []byte
}

// verify checks a plugin's binary before a start: the plugin dir and every path component
// below it down to the binary must be real directories (no symlinks), owned by root or
// daemonUID, and not writable by group or others; the binary must be such a regular,
// executable file; its SHA-256 must equal the pin. Each failure names the file and the fix.
// verify only reads: it runs nothing.
func verify(pluginDir string, daemonUID int, p model.Plugin) (trusted, error) {
	dir := filepath.Clean(pluginDir)
	path := p.Resolve(dir)
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || !filepath.IsAbs(dir) {
		return trusted{}, refuse(p.Name, "%s is not inside the plugin dir %s; install it there", path, pluginDir)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := dir
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			cur = filepath.Join(cur, parts[i])
		}
		if err := checkNode(p.Name, cur, daemonUID, i == len(parts)-1); err != nil {
			return trusted{}, err
		}
	}
	sum, err := hashFile(path)
	if err != nil {
		return trusted{}, refuse(p.Name, "reading %s: %v", path, err)
	}
	want, err := hex.DecodeString(strings.ToLower(p.SHA256))
	if err != nil || len(want) != sha256.Size {
		return trusted{}, refuse(p.Name, "the pin %q is not a SHA-256 (64 hexadecimal digits); set sha256 to %x", p.SHA256, sum)
	}
	if !bytes.Equal(sum, want) {
		return trusted{}, refuse(p.Name, "%s has SHA-256 %x but the config pins %s; if you installed this binary on purpose, set the plugin's sha256 to %x, otherwise reinstall the pinned build",
			path, sum, strings.ToLower(p.SHA256), sum)
	}
	return trusted{path: path, sha256: sum}, nil
}

// checkNode checks one path component (the binary when file is true) with Lstat, so a
// symlink is seen as one.
func checkNode(plugin, path string, daemonUID int, file bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refuse(plugin, "%s does not exist; install the plugin binary there or fix its path", path)
		}
		return refuse(plugin, "%v", err)
	}
	mode := fi.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return refuse(plugin, "%s is a symlink (to %s); symlinks are not followed in the plugin dir: copy the real file or directory there", path, target)
	case file && !mode.IsRegular():
		return refuse(plugin, "%s is not a regular file (%s)", path, mode.Type())
	case file && mode.Perm()&0o100 == 0:
		return refuse(plugin, "%s is not executable by its owner (mode %04o); chmod 0755 it", path, mode.Perm())
	case !file && !mode.IsDir():
		return refuse(plugin, "%s is not a directory", path)
	case mode.Perm()&0o022 != 0:
		return refuse(plugin, "%s is writable by group or others (mode %04o); chmod go-w %s", path, mode.Perm(), path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return refuse(plugin, "%s: cannot read its owner", path)
	}
	if uid := int(st.Uid); uid != 0 && uid != daemonUID {
		return refuse(plugin, "%s is owned by uid %d, neither root nor the daemon (uid %d); chown root %s", path, uid, daemonUID, path)
	}
	return nil
}

func hashFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
