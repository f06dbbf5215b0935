package dsa

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// summary renders an assignment as "core:wq" pairs ("-" for CPU copy, "*" after a cross-NUMA
// device) and the warnings' codes and objects.
func summary(a Assignment) (string, string) {
	var p, w []string
	for _, x := range a.PMDs {
		s := "-"
		if x.WQ != nil {
			s = x.WQ.Name
			if !x.SameNUMA {
				s += "*"
			}
		}
		p = append(p, strconv.Itoa(x.Core)+":"+s)
	}
	for _, x := range a.Warnings {
		w = append(w, string(x.Code)+"@"+x.Object)
	}
	return strings.Join(p, " "), strings.Join(w, " ")
}

func TestAssignPMDs(t *testing.T) {
	wq := func(name string, numa int) WQRef { return WQRef{Name: name, Device: "dsa" + name[2:3], NUMA: numa} }
	twoNUMA := []WQRef{wq("wq0.0", 0), wq("wq0.1", 0), wq("wq2.0", 1)}
	for _, tc := range []struct {
		name       string
		pmds       []PMD
		wqs        []WQRef
		want, warn string
	}{
		{"enough on each node", []PMD{{Core: 1, NUMA: 0}, {Core: 9, NUMA: 1}, {Core: 2, NUMA: 0}}, twoNUMA,
			"1:wq0.0 9:wq2.0 2:wq0.1", ""},
		{"node 1 short: falls back to node 0 in dmadev order", []PMD{{Core: 9, NUMA: 1}, {Core: 10, NUMA: 1}, {Core: 1, NUMA: 0}}, twoNUMA,
			"9:wq2.0 10:wq0.0* 1:wq0.1", "DSA_NUMA@pmd core 10"},
		{"too few", []PMD{{Core: 1}, {Core: 2}, {Core: 3}, {Core: 4}, {Core: 5}}, twoNUMA,
			"1:wq0.0 2:wq0.1 3:wq2.0* 4:- 5:-", "DSA_NUMA@pmd core 3 DSA_TOO_FEW_WQS@pmd cores 4,5"},
		{"no WQs at all", []PMD{{Core: 1}}, nil, "1:-", "DSA_TOO_FEW_WQS@pmd cores 1"},
		{"unknown device node never counts as the PMD's own", []PMD{{Core: 1, NUMA: 0}}, []WQRef{wq("wq0.0", -1)},
			"1:wq0.0*", "DSA_NUMA@pmd core 1"},
		{"no PMDs", nil, twoNUMA, "", ""},
	} {
		a := AssignPMDs(tc.pmds, tc.wqs)
		got, warn := summary(a)
		if got != tc.want || warn != tc.warn {
			t.Errorf("%s: AssignPMDs = %q, warnings %q; want %q, %q", tc.name, got, warn, tc.want, tc.warn)
		}
	}

	a := AssignPMDs([]PMD{{Core: 1}, {Core: 2}, {Core: 3}}, []WQRef{wq("wq0.0", 0)})
	if w := a.Warnings[0]; w.Message != "3 PMDs > 1 WQs: extra PMDs fall back to CPU copy; add WQs (wqs.count, or another device) or run fewer PMD threads (other_config:pmd-cpu-mask)" {
		t.Errorf("too few: %q", w.Message)
	}
	if a.PMDs[0].Why != "wq0.0 on NUMA 0, the PMD thread's own node" || a.PMDs[2].Why != "CPU copy: all 1 work queues are taken by other PMD threads" {
		t.Errorf("why: %q / %q", a.PMDs[0].Why, a.PMDs[2].Why)
	}
	a = AssignPMDs([]PMD{{Core: 9, NUMA: 1}}, []WQRef{wq("wq0.0", 0)})
	if w := a.Warnings[0]; !strings.Contains(w.Message, "PMD thread on core 9 (NUMA 1) uses wq0.0 on NUMA 0: cross-socket DMA") || !strings.Contains(a.PMDs[0].Why, "no free work queue on the PMD thread's NUMA 1") {
		t.Errorf("cross-NUMA: %q / %q", w.Message, a.PMDs[0].Why)
	}
	// The WQ in an assignment is a copy: changing it does not change the caller's slice.
	in := []WQRef{wq("wq0.0", 0)}
	a = AssignPMDs([]PMD{{Core: 1}}, in)
	a.PMDs[0].WQ.Name = "changed"
	if in[0].Name != "wq0.0" {
		t.Error("the assignment aliases the caller's WQRef")
	}
	// Many CPU-copy cores: the warning's object stays short.
	many := make([]PMD, 40)
	for i := range many {
		many[i].Core = i
	}
	if _, w := summary(AssignPMDs(many, nil)); w != "DSA_TOO_FEW_WQS@pmd cores 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,…(+24)" {
		t.Errorf("many: %q", w)
	}
}

func TestPMDCoresFromMask(t *testing.T) {
	for _, tc := range []struct {
		mask string
		want []int
	}{
		{"", nil},
		{"0x6", []int{1, 2}},
		{"6", []int{1, 2}},
		{"0XF0", []int{4, 5, 6, 7}},
		{"0x100000001", []int{0, 32}},
		{"0", nil},
		{"0x" + strings.Repeat("0", MaxPMDMaskDigits-1) + "1", []int{0}},
		{"8" + strings.Repeat("0", MaxPMDMaskDigits-1), []int{MaxPMDMaskDigits*4 - 1}},
	} {
		got, err := PMDCoresFromMask(tc.mask)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("PMDCoresFromMask(%.20q) = %v, %v; want %v", tc.mask, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ mask, want string }{
		{"0x", "no hex digits"},
		{"0x6g", `'g' is not a hex digit`},
		{"1,2", `',' is not a hex digit`},
		{" 0x6", `'x' is not a hex digit`},
		{strings.Repeat("f", MaxPMDMaskDigits+1), "of 257 hex digits"},
	} {
		if got, err := PMDCoresFromMask(tc.mask); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pmd-cpu-mask") {
			t.Errorf("PMDCoresFromMask(%.20q) = %v, %v; want an error with %q", tc.mask, got, err, tc.want)
		}
	}
}
