//go:build linux && !amd64 && !arm64

package lab

// sysSetns is zero where the lab does not know setns(2)'s number: Netns.Do then fails.
const sysSetns = 0
