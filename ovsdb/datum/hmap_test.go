package datum

import (
	"slices"
	"testing"
)

func TestHashOrder(t *testing.T) {
	// Orders observed on ovs-vsctl 3.1 through "'show' command has no '...' option" and the
	// --commands listing (see also TestListings).
	tests := []struct {
		keys      []string
		wantFirst string
	}{
		{[]string{"--c", "--b", "--a"}, "--c"},
		{[]string{"--q", "--p", "--x", "--a"}, "--x"},
		{[]string{"--zzz", "--aaa"}, "--zzz"},
		{[]string{"--aaa", "--zzz"}, "--aaa"},
		{[]string{"--with-iface", "--all", "--real", "--fake", "--may-exist", "--if-exists"}, "--if-exists"},
		{[]string{"--if-exists", "--may-exist", "--fake", "--real", "--all", "--with-iface"}, "--with-iface"},
	}
	for _, tt := range tests {
		t.Run(tt.wantFirst, func(t *testing.T) {
			order := HashOrder(tt.keys)
			sorted := slices.Clone(order)
			slices.Sort(sorted)
			if len(order) != len(tt.keys) || !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5}[:len(tt.keys)]) {
				t.Fatalf("HashOrder(%q) = %v is not a permutation", tt.keys, order)
			}
			if got := tt.keys[order[0]]; got != tt.wantFirst {
				t.Errorf("first of %q = %q, want %q", tt.keys, got, tt.wantFirst)
			}
		})
	}
}
