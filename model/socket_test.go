package model_test

import (
	"testing"

	"github.com/ovsplane/ovsplane/model"
)

func TestAPIAddr(t *testing.T) {
	if got := model.DefaultAPIAddr(); got != "unix:/var/lib/ovsplane/ovsplaned.sock" {
		t.Errorf("DefaultAPIAddr() = %q", got)
	}
	if got := model.APIAddr("/run/ovsplane/"); got != "unix:/run/ovsplane/ovsplaned.sock" {
		t.Errorf("APIAddr(/run/ovsplane/) = %q", got)
	}
}
