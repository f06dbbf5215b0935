package lab

import "syscall"

// sysSetns is setns(2)'s number on linux/arm64.
const sysSetns = syscall.SYS_SETNS
