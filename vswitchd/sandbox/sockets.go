package sandbox

import (
	"path/filepath"
	"strings"
)

// vhostSockDirs returns the directories in which ovs-vswitchd creates the sockets of
// dpdkvhostuser ports, which sweepSockets cleans (ovsproc.RemoveStaleSockets) before a vswitchd
// starts: the sandbox directory (OVS_RUNDIR) and, when other_config sets vhost-sock-dir, that
// directory below it (OVS reads it relative to OVS_RUNDIR). A vhost-sock-dir that would leave
// the sandbox directory is ignored: the sandbox touches nothing outside Dir.
func vhostSockDirs(dir string, otherConfig map[string]string) []string {
	dirs := []string{dir}
	sub := otherConfig["vhost-sock-dir"]
	if sub == "" {
		return dirs
	}
	p := filepath.Join(dir, sub)
	if rel, err := filepath.Rel(dir, p); err == nil && rel != "." && !filepath.IsAbs(sub) &&
		rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		dirs = append(dirs, p)
	}
	return dirs
}
