package datum

import (
	"math"
	"testing"
)

func TestParseCLong(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"+7", 7, true},
		{" \t\n5", 5, true},
		{"010", 10, true},
		{"-0", 0, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999999999", 0, false},
		{"", 0, false},
		{"+", 0, false},
		{"1 ", 0, false},
		{"0x10", 0, false},
		{"1.5", 0, false},
		{"+-1", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := ParseCLong(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseCLong(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}
