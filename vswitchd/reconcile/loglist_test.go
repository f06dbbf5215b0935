package reconcile

import (
	"fmt"
	"testing"

	"github.com/ovsplane/ovsplane/model/limits"
)

func TestLogList(t *testing.T) {
	names := make([]string, 100000)
	for i := range names {
		names[i] = fmt.Sprint("port/p", i)
	}
	got := logList(names)
	if len(got) != limits.MaxLoggedObjects+1 || got[0] != "port/p0" || got[len(got)-1] != "… and 99980 more" {
		t.Fatalf("got %d names, last %q", len(got), got[len(got)-1])
	}
	if got := logList(names[:3]); len(got) != 3 {
		t.Fatalf("got %v", got)
	}
}
