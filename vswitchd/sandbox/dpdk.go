package sandbox

import (
	"errors"
	"fmt"

	"github.com/ovsplane/ovsplane/internal/ovsproc"
)

// errNoDPDK is the cause of a DPDKOn start that cannot run DPDK.
var errNoDPDK = errors.New("DPDK not possible")

// dpdkFacts is what the DPDK decision depends on.
type dpdkFacts struct {
	mode    DPDKMode
	host    ovsproc.DPDKHost // the binary, root, hugepages and the dpdk-socket-mem to use
	initOff string           // where dpdk-init=false comes from, when it does
}

// decideDPDK says whether to run DPDK and why, as a phrase for Describe and the log. In on
// mode an impossible DPDK is an error wrapping errNoDPDK instead.
func decideDPDK(f dpdkFacts) (use bool, why string, err error) {
	if f.mode == DPDKOff {
		return false, "DPDK off as asked", nil
	}
	missing := f.host.Missing()
	if f.initOff != "" {
		missing = f.initOff + " is false"
	}
	if missing == "" {
		return true, fmt.Sprintf("DPDK with %d MiB of hugepages (%d MiB were free)", f.host.SocketMemMB, f.host.Hugepages.FreeMB()), nil
	}
	if f.mode == DPDKOn {
		return false, "", fmt.Errorf("%w: %s", errNoDPDK, missing)
	}
	return false, "no DPDK: " + missing, nil
}
