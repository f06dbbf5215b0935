package limits

import (
	"strings"
	"testing"
)

func TestCheckJob(t *testing.T) {
	for _, tc := range []struct {
		name, typ, config, want string
	}{
		{"vhu-1.rx_q", "ticker", `{"a":1}`, ""},
		{"a", "t", ``, ""},
		{"", "t", ``, `job name "" must be`},
		{"-a", "t", ``, `job name "-a" must be`},
		{strings.Repeat("a", 65), "t", ``, "must be a letter or digit followed by up to 63"},
		{"a", "T", ``, `type "T" must be a job type`},
		{"a", "t", `[1]`, `job "a": config must be a JSON object`},
		{"a", "t", `null`, `config must be a JSON object`},
		{"a", "t", `{"a":` + strings.Repeat(" ", MaxJobConfigBytes) + `1}`, "more than 16384 (limits.MaxJobConfigBytes)"},
	} {
		err := CheckJob(tc.name, tc.typ, []byte(tc.config))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckJob(%.20q, %q, %.20q) = %v, want %q", tc.name, tc.typ, tc.config, err, tc.want)
		}
	}
}

// FuzzCheckJob: any job spec is checked without panicking, and an accepted one has a config
// that is empty or a JSON object within the bound.
func FuzzCheckJob(f *testing.F) {
	f.Add("clock", "ticker", []byte(`{"every_ms":5}`))
	f.Add("a b", "T", []byte(`[`))
	f.Fuzz(func(t *testing.T, name, typ string, config []byte) {
		if CheckJob(name, typ, config) == nil && (len(config) > MaxJobConfigBytes || len(config) > 0 && config[0] != '{' && strings.TrimSpace(string(config))[0] != '{') {
			t.Fatalf("accepted config %q", config)
		}
	})
}
