// Package apiclients holds the tests of ovsplaned's API clients against a live daemon: the Python
// example (examples/python, run with Debian's /usr/bin/python3 only) and the curl recipes of
// docs/api.md, each extracted from the document and run. The daemon is the real ovsplaned binary
// on its embedded OVSDB (--embedded), so no Open vSwitch is needed.
package apiclients
