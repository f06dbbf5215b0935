package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ovsplane/ovsplane/plugins/flowmon/internal/flowmonplugin"
)

// runGen is `flowmon gen`: one generator run in this process, its report printed.
func runGen(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("flowmon gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c flowmonplugin.GenConfig
	fs.StringVar(&c.Interface, "interface", "", "the interface to send on (a veth peered with an OVS port); required")
	fs.StringVar(&c.ReceiveInterface, "receive-interface", "", "the interface to count the frames on after OVS, per flow")
	fs.IntVar(&c.FrameSize, "frame-size", flowmonplugin.DefaultFrame, "frame size in bytes, 64 to 1448")
	fs.IntVar(&c.Flows, "flows", flowmonplugin.DefaultGenFlows, "distinct flows (source ports src-port..)")
	fs.Int64Var(&c.RatePPS, "rate", 0, "packets per second over all flows (0: as fast as possible)")
	duration := fs.Duration("duration", flowmonplugin.DefaultDuration, "how long to send")
	fs.StringVar(&c.Src, "src", "", "source IPv4 address (default 10.0.0.1)")
	fs.StringVar(&c.Dst, "dst", "", "destination IPv4 address (default 10.0.0.2)")
	srcPort := fs.Uint("src-port", 10000, "the first flow's UDP source port")
	dstPort := fs.Uint("dst-port", 9, "UDP destination port")
	fs.StringVar(&c.SrcMAC, "src-mac", "", "source MAC (default: the interface's)")
	fs.StringVar(&c.DstMAC, "dst-mac", "", "destination MAC (default broadcast)")
	format := fs.String("format", "table", "report: table or json")
	if err := fs.Parse(args); err != nil {
		return helpOrUsage(err)
	}
	if fs.NArg() > 0 || (*format != "table" && *format != "json") || *srcPort > 65535 || *dstPort > 65535 || *srcPort == 0 || *dstPort == 0 {
		fmt.Fprintln(stderr, "usage: flowmon gen --interface IF [flags]; --format table|json; ports 1 to 65535")
		fs.PrintDefaults()
		return 2
	}
	c.SrcPort, c.DstPort = uint16(*srcPort), uint16(*dstPort)
	c.DurationMillis = duration.Milliseconds()
	if c.DurationMillis <= 0 || *duration > flowmonplugin.MaxDuration {
		fmt.Fprintf(stderr, "flowmon gen: --duration %s: want 1ms to %s\n", *duration, flowmonplugin.MaxDuration)
		return 2
	}
	data, err := json.Marshal(c)
	if err != nil {
		fmt.Fprintln(stderr, "flowmon gen:", err)
		return 2
	}
	if _, err := flowmonplugin.ParseGenConfig(data); err != nil {
		fmt.Fprintln(stderr, "flowmon gen:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := flowmonplugin.RunGenerator(ctx, data)
	if err != nil && rep.SentPackets == 0 {
		fmt.Fprintln(stderr, "flowmon gen:", err)
		return 1
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(rep); werr != nil {
			fmt.Fprintln(stderr, "flowmon gen:", werr)
			return 1
		}
	} else if werr := rep.WriteTable(stdout); werr != nil {
		fmt.Fprintln(stderr, "flowmon gen:", werr)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowmon gen: the run ended after %s: %v\n", time.Since(start).Round(time.Millisecond), err)
		return 1
	}
	return 0
}
