package apiserver_test

import (
	"testing"

	"connectrpc.com/connect"

	v1 "github.com/ovsplane/ovsplane/api/gen/ovsplane/v1"
	"github.com/ovsplane/ovsplane/model"
)

// ListStatus carries the watcher plugins' interface statuses next to the managed objects'.
func TestListStatusWatched(t *testing.T) {
	d, c := startSeeded(t)
	st, err := c.ListStatus(t.Context(), connect.NewRequest(&v1.ListStatusRequest{}))
	if err != nil || len(st.Msg.Watched) != 0 {
		t.Fatalf("ListStatus without watched statuses = %v, %v", st, err)
	}
	d.fake.SetWatched([]model.WatchedStatus{{Plugin: "dsa", Interface: "vhu-os", Bridge: "br-int", Port: "vhu-os",
		Owner: model.WatchedOwnerForeign, Level: "warning", Summary: "CPU copy", Details: map[string]string{"numa": "1"}}})
	st, err = c.ListStatus(t.Context(), connect.NewRequest(&v1.ListStatusRequest{}))
	if err != nil || len(st.Msg.Watched) != 1 {
		t.Fatalf("ListStatus = %v, %v", st, err)
	}
	if w := st.Msg.Watched[0]; w.GetPlugin() != "dsa" || w.GetInterface() != "vhu-os" || w.GetLevel() != "warning" ||
		w.GetOwner() != "foreign" || w.GetDetails()["numa"] != "1" || len(st.Msg.Statuses) == 0 {
		t.Errorf("ListStatus = %v", st.Msg)
	}
}
