package vdpa

import (
	"slices"
	"testing"
)

func TestRepresentorVFs(t *testing.T) {
	for args, want := range map[string][]int{
		"representor=vf3":                  {3},
		"representor=[2]":                  {2},
		"representor=[0-3],dv_flow_en=1":   {0, 1, 2, 3},
		"representor=[1,4]":                {1, 4},
		"representor=pf0vf[0-2]":           {0, 1, 2},
		"dv_flow_en=1,representor=vf[5,7]": {5, 7},
		"class=eth":                        nil,
	} {
		if got := representorVFs(args); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", args, got, want)
		}
	}
}

func TestVFAddress(t *testing.T) {
	for _, c := range []struct {
		pf             string
		offset, stride int
		index          int
		want           string
	}{
		{"0000:65:00.0", 2, 1, 0, "0000:65:00.2"},
		{"0000:65:00.0", 2, 1, 6, "0000:65:01.0"},
		{"0000:65:00.1", 9, 1, 0, "0000:65:01.2"},
		{"65:00.0", 2, 1, 1, "0000:65:00.3"},
	} {
		got, err := VFAddress(c.pf, c.offset, c.stride, c.index)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %s %v", c, got, err)
		}
	}
	if _, err := parseBDF("0000:65:00"); err == nil {
		t.Error("bad address accepted")
	}
}
