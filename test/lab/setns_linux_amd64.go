package lab

// sysSetns is setns(2)'s number on linux/amd64, which package syscall does not export.
const sysSetns = 308
