//go:build !linux

package ovslane

import "errors"

// Up sets a lane's kernel device up; lanes exist on Linux only.
func Up(name string) error { return errors.New("ovslane: lanes need Linux") }
