package cli

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ovsplane/ovsplane/test/lab"
)

// TestRepeatedGlobalOptionValue checks, against ovs-vsctl and a real database, which copy of a
// command option repeated among the global options ovs-vsctl uses: "--columns=a --columns=b
// list Open_vSwitch" prints the column that Command.Option("--columns") names. Copies of
// --if-exists are mixed in because every entry changes the hash map's layout.
func TestRepeatedGlobalOptionValue(t *testing.T) {
	requireVsctl(t)
	db := lab.StartOVSDB(t)
	columns := []string{"bridges", "cur_cfg", "datapath_types", "db_version", "external_ids",
		"iface_types", "manager_options", "next_cfg", "other_config", "ovs_version", "ssl",
		"statistics", "system_type", "system_version"}
	r := rand.New(rand.NewPCG(5, 5))
	for i := range 40 {
		var args []string
		for k := range 1 + i%7 {
			if r.IntN(3) == 0 {
				args = append(args, "--if-exists")
			}
			args = append(args, "--columns="+columns[(i+k)%len(columns)])
		}
		args = append(args, "list", "Open_vSwitch")
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			full := append([]string{"--db=" + db.Endpoint}, args...)
			inv, err := Parse(full)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, _ := inv.Commands[0].Option("--columns")
			out, _, err := db.VsctlErr(t.Context(), args...)
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := strings.Cut(out, " ")
			if got != want {
				t.Errorf("ovs-vsctl listed column %q, Parse says --columns=%q", got, want)
			}
		})
	}
}

// TestEffectiveOptions pins the rule on hand-picked cases (no ovs-vsctl needed).
func TestEffectiveOptions(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--columns=a", "list", "Bridge"}, "a"},
		{[]string{"--columns=a", "--columns=b", "list", "Bridge"}, "a"},
		{[]string{"--columns=a", "--columns=b", "--columns=c", "list", "Bridge"}, "c"},
		{[]string{"--columns=a", "--columns=b", "--columns=c", "--columns=d", "list", "Bridge"}, "d"},
		{[]string{"--columns", "a", "--", "--if-exists", "list", "Bridge"}, "a"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			inv, err := Parse(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			c := inv.Commands[0]
			got, ok := c.Option("--columns")
			if !ok || got != tt.want {
				t.Errorf("--columns = %q (%v), want %q", got, ok, tt.want)
			}
			names := fmt.Sprint(c.Options)
			if strings.Count(names, "--columns") != 1 {
				t.Errorf("Options %s: want one --columns entry", names)
			}
		})
	}
}
