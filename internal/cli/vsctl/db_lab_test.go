//go:build linux

package vsctl

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovsplane/ovsplane/test/lab"
	"github.com/ovsplane/ovsplane/test/vsctldiff"
)

// dbSetup builds the same starting database on both servers (with ovs-vsctl).
func dbSetup() []string {
	return []string{
		"add-br br0", "add-port br0 p1", "add-port br0 p2 -- set Interface p2 type=internal",
		"add-br br1", "set Bridge br0 other_config:a=1 other_config:b=2 external_ids:x=y",
	}
}

// dbLines are the command lines compared; each runs with --no-wait. Rows of list and find
// come in different orders (ovs-vsctl follows its hash table), so records are compared as
// sets.
func dbLines() []string {
	return []string{
		"get Bridge br0 name", "get BRIDGE br0 NAME", "get br br0 na", "get Bridge br0 stp-enable",
		"get Bridge br0 s", "get i p1 name", "get Interface p1 ofport_req", "get open . bridges",
		"get Port p1 -UUID", "get Port p1 _version", "get Port nope name", "--if-exists get Port nope name",
		"get Bridge br0 other_config:a", "get Bridge br0 other_config:zz",
		"--if-exists get Bridge br0 other_config:zz other_config:a", "get Bridge br0 ports:x",
		"get Bridge br0 name=x", "get Bridge br0 :x", `get Bridge br0 'other_config:"a'`, `get Bridge br0 'other_config:a\'`,
		"set Port p1 tag=5 -- get Port p1 tag", "set Port p1 tag=[7,8]", "set Port p1 tag=-1",
		"set Port p1 trunks=[1-3,10,20-22] -- get Port p1 trunks", "set Port p1 trunks=5-1",
		"add Port p1 trunks 100 400-402 -- get Port p1 trunks", "remove Port p1 trunks 2 401 -- get Port p1 trunks",
		"remove Port p1 trunks []", "add Port p1 tag 3", "add Port p1 tag 4", "add Port p1 tag 4 -- get Port p1 tag",
		"add Bridge br0 other_config a=9 d=4", "add Bridge br0 other_config a=7 -- get Bridge br0 other_config",
		"remove Bridge br0 other_config a=8 b=2", "remove Bridge br0 other_config a d", "remove Bridge br0 other_config x=",
		"get Bridge br0 other_config", "set Port p1 name:x=y", "set Port p1 name", "set Port p1 name=",
		"clear Port p1 trunks tag -- get Port p1 trunks tag", "clear Port p1 interfaces", "clear Bridge br0 name",
		"set Bridge br0 fail_mode=bad", "add Bridge br0 fail_mode standalone", "add Bridge br0 fail_mode secure",
		"list Port p1", "list Port p1 p2 nope", "--if-exists list Port p1 nope", "--columns=name,tag list Port p1",
		"--columns=_UUID list Port p1", "--columns= list Port p1", "--columns=n list Bridge br0",
		"--columns=name find Bridge", "--columns=name find Port tag=[]", "--columns=name find Bridge name!=br0",
		"--columns=name find Bridge other_config:c!=3", "--columns=name find Bridge other_config:zz{!=}3",
		"--columns=name find Bridge other_config{>=}{b=2}", "--columns=name find Bridge name{in}[br0,br1]",
		"--columns=name find Bridge name{not-in}[br0]", "--columns=name find Bridge name>=br1",
		"--columns=name find Bridge name", "--columns=name find Port tag=[1,2]", "--columns=name find Bridge ports:x=1",
		"comment foo bar", "create Foo",
		`--id=@m create Manager target="\"ptcp:2\""`, "get Manager ptcp:2 target",
		"--id=@q create QoS type=linux-htb -- set Port p1 qos=@q", "get QoS p1 type",
		"set Port p1 qos=@q2 -- --id=@q2 create QoS type=linux-hfsc", "set Port p1 qos=@q3", "--id=x create QoS",
		"--id=@a create QoS -- --id=@a create QoS", "--id=@a get Bridge br0 -- get Bridge br1 name",
		"set Bridge br1 mirrors=@a -- --id=@a get Bridge br0",
		"-- --id=@c create Controller target=\"tcp:1.2.3.4\" -- set Bridge br0 controller=@c", "get Controller br0 target",
		"--id=@i create IPFIX targets=\"1.2.3.4:5\" -- set Bridge br0 ipfix=@i", "get IPFIX br0 targets",
		"--if-exists get IPFIX br1 targets", "create Flow_Sample_Collector_Set id=5 bridge=@b -- --id=@b get Bridge br0",
		"get Flow_Sample_Collector_Set 05 id", "get Flow_Sample_Collector_Set +5 id",
		"--id=@m create Mirror name=m0 select_src_port=@p -- --id=@p get Port p1 -- add Bridge br0 mirrors @m",
		"get Mirror m0 name", "--id=@q create Queue other_config:x=1 -- --id=@qos create QoS queues:0=@q -- set Port p2 qos=@qos",
		"find Queue other_config:x{in}[1,2]", "find Queue other_config{<}{x=1,y=2}", "find Queue other_config:1=[a,b]",
		"wait-until Bridge br0 name=br0 -- get Bridge br0 name", "wait-until Port p1 name:x=1", "wait-until Port p1 tag=xyz",
		"destroy Bridge br1", "destroy Interface p1", "--all destroy QoS", "--all --if-exists destroy Manager",
		"--all destroy Manager x", "destroy Manager nope", "--if-exists destroy Manager nope",
		"set Port p1 other_config:a=1 -- set Port p1 other_config:a=2 -- get Port p1 other_config",
		`set Bridge br0 "external_ids:a b=c d" -- get Bridge br0 'external_ids:"a b"'`,
		"set Interface p1 ofport=5", "--id=@x get Port p1 -- --id=@x get Port p2",
	}
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	logRE  = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\|\d+\|.*\n`)
)

// normalise hides UUIDs and sorts the records of list and find output.
func normalise(s string) string {
	s = strings.TrimSuffix(uuidRE.ReplaceAllString(s, "<uuid>"), "\n")
	recs := strings.Split(s, "\n\n")
	slices.Sort(recs)
	return strings.Join(recs, "\n\n")
}

// TestDBCommandsMatchOvsVsctl runs dbLines with ovs-vsctl and with vsctl, each on its own
// fresh database (no ovs-vswitchd, --no-wait), and compares exit status, stdout, stderr
// (log lines aside: the runner gives commands no logger yet) and the final databases.
func TestDBCommandsMatchOvsVsctl(t *testing.T) {
	lab.Require(t, lab.NeedOVS)
	bin := filepath.Join(t.TempDir(), "ovs-vsctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ovsplane/ovsplane/cmd/vsctl").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ref, cand := lab.StartOVSDB(t), lab.StartOVSDB(t)
	for _, l := range dbSetup() {
		for _, db := range []*lab.OVSDB{ref, cand} {
			w, _ := vsctldiff.SplitWords(l)
			db.Vsctl(t, append([]string{"--no-wait"}, w...)...)
		}
	}
	run := func(prog string, db *lab.OVSDB, args []string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, prog, append([]string{"--db=" + db.Endpoint, "--no-wait", "-t", "3"}, args...)...)
		cmd.Env = db.Env()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if code < 0 {
				code = 142 // killed by SIGALRM, as the timeout of ovs-vsctl ends
			}
		}
		return code, normalise(stdout.String()), uuidRE.ReplaceAllString(logRE.ReplaceAllString(stderr.String(), ""), "<uuid>")
	}
	for _, l := range dbLines() {
		w, err := vsctldiff.SplitWords(l)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		rc, ro, re := run("ovs-vsctl", ref, w)
		cc, co, ce := run(bin, cand, w)
		if rc != cc || ro != co || re != ce {
			t.Errorf("`%s`:\novs-vsctl: exit %d\n%s%s\nvsctl: exit %d\n%s%s", l, rc, ro, re, cc, co, ce)
		}
	}
	dump := func(db *lab.OVSDB) string {
		out, err := exec.Command("ovsdb-client", "dump", db.Endpoint).Output()
		if err != nil {
			t.Fatalf("ovsdb-client dump: %v", err)
		}
		lines := strings.Split(uuidRE.ReplaceAllString(string(out), "<uuid>"), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	if a, b := dump(ref), dump(cand); a != b {
		t.Errorf("final databases differ:\novs-vsctl:\n%s\nvsctl:\n%s", a, b)
	}
}
