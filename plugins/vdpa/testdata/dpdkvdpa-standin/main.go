// Command dpdkvdpa-standin stands in for DPDK's dpdk-vdpa in the vdpa plugin's tests (no mlx5
// NIC here). It records its pid, parent and argv as run-<pid>.json in the directory of its own
// binary, says so on standard output and error, and stays up until a signal:
//
//   - SIGTERM or SIGINT: exits 0 (unless a file ignore-sigterm exists beside the binary);
//   - SIGUSR1: crashes (exit status 1), as the real driver might.
//
// A file crash-on-start beside the binary makes it exit 2 right after recording.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(4)
	}
	dir := filepath.Dir(self)
	// Signals are caught before the run is recorded: a test that signals a recorded run must
	// never race the Go runtime, which ignores SIGUSR1 until Notify.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	rec, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "ppid": os.Getppid(), "argv": os.Args})
	tmp := filepath.Join(dir, fmt.Sprintf(".run-%d.json", os.Getpid()))
	if err := os.WriteFile(tmp, rec, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(4)
	}
	if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("run-%d.json", os.Getpid()))); err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(4)
	}
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	if exists("crash-on-start") {
		fmt.Fprintln(os.Stderr, "stand-in: crashing on start as asked")
		os.Exit(2)
	}
	fmt.Printf("EAL: stand-in dpdk-vdpa pid %d up\n", os.Getpid())
	fmt.Fprintf(os.Stderr, "stand-in: serving, argv %q\n", os.Args[1:])
	for sig := range sigs {
		switch {
		case sig == syscall.SIGUSR1:
			fmt.Fprintln(os.Stderr, "stand-in: crashing as asked")
			os.Exit(1)
		case exists("ignore-sigterm"):
			fmt.Fprintln(os.Stderr, "stand-in: ignoring", sig)
		default:
			fmt.Fprintln(os.Stderr, "stand-in: exiting on", sig)
			os.Exit(0)
		}
	}
}
