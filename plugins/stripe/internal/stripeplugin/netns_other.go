//go:build !linux

package stripeplugin

import "fmt"

// inNetns runs fn here; named namespaces need Linux.
func inNetns(name string, fn func() error) error {
	if name != "" {
		return fmt.Errorf("netns %s: network namespaces need Linux", name)
	}
	return fn()
}
