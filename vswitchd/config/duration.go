package config

import (
	"fmt"
	"reflect"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// MaxReconnectWait is the largest ovsdb.reconnect_wait Validate accepts: a write request held
// longer than that for an OVSDB outage is better told to retry.
const MaxReconnectWait = 10 * time.Minute

// MinApplyTimeout and MaxApplyTimeout bound ovsdb.apply_timeout: below a second, a busy
// ovs-vswitchd fails writes it is about to apply; above an hour, an ovs-vswitchd that is not
// running holds every writer that long before anyone is told.
const (
	MinApplyTimeout = time.Second
	MaxApplyTimeout = time.Hour
)

// Duration is a time.Duration written, in the file, the environment and flags, as Go duration
// text with a unit ("5s", "1m30s", "250ms"); a bare number such as "5" is refused, since its unit
// would be a guess. It marshals back to that text, so a marshalled Config loads again as the
// same Config.
type Duration time.Duration

// String is the duration's Go text, like "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration as its Go text.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// parseDuration is the text form of a Duration; the error says how to write one.
func parseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number with a unit, like \"5s\", \"1m\" or \"250ms\"", s)
	}
	return Duration(d), nil
}

// durationHook decodes strings into Duration fields (see Duration); other conversions pass.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(Duration(0)) || from.Kind() != reflect.String {
		return data, nil
	}
	return parseDuration(data.(string))
}

// decodeHook is viper's default decode hook with durationHook in front.
var decodeHook = mapstructure.ComposeDecodeHookFunc(
	durationHook,
	mapstructure.StringToTimeDurationHookFunc(),
	mapstructure.StringToSliceHookFunc(","),
)

// applyTimeoutProblem says what is wrong with an ovsdb.apply_timeout of d that was set, or ""
// when MinApplyTimeout ≤ d ≤ MaxApplyTimeout.
func applyTimeoutProblem(d Duration) string {
	if time.Duration(d) >= MinApplyTimeout && time.Duration(d) <= MaxApplyTimeout {
		return ""
	}
	return fmt.Sprintf("%s out of range: write a duration from %s to %s, like \"5m\" (or leave the key out for the default, 2m)",
		d, MinApplyTimeout, MaxApplyTimeout)
}

// reconnectWaitProblem says what is wrong with an ovsdb.reconnect_wait of w that was set, or ""
// when 0 < w ≤ MaxReconnectWait.
func reconnectWaitProblem(w Duration) string {
	if w > 0 && time.Duration(w) <= MaxReconnectWait {
		return ""
	}
	return fmt.Sprintf("%s out of range: write a duration above 0 and at most %s, like \"5s\" or \"1m\" (or leave the key out for the default, 5s)",
		w, MaxReconnectWait)
}
