#!/usr/bin/env bash
# plugin-dev.sh PLUGIN_DIR RUN_DIR [PORT_TYPE] — the build half of `make plugin-dev`: builds the
# plugin whose main package is PLUGIN_DIR (in this repository, or a module of its own whose go.mod
# replaces github.com/ovsplane/ovsplane with this checkout), installs it with its SHA-256 pin in
# RUN_DIR/plugins, asks the binary for its name (Info.Name, printed in debug mode) and writes
# RUN_DIR/ovsplaned.yaml: the plugin and a bridge br0, with a port dev0 of PORT_TYPE when given.
# Prints the configuration's path; touches no tracked file.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PLUGIN_DIR RUN_DIR [PORT_TYPE]" >&2; exit 2; }
src=$1 run=$2 type=${3:-}
GO=${GO:-go}
[[ -z "$type" || "$type" =~ ^[a-z][a-z0-9-]{0,39}$ ]] || { echo "plugin-dev: port type '$type': use [a-z][a-z0-9-]*" >&2; exit 2; }
mkdir -p "$run/plugins"
run=$(cd "$run" && pwd)
# The host refuses a plugin dir, or a binary, writable by group or others.
chmod 0755 "$run" "$run/plugins"
bin=$run/plugins/ovsplane-plugin-dev
(cd "$src" && CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -o "$bin" .)
sum=$(sha256sum "$bin" | cut -d' ' -f1)

# In debug mode the plugin serves without a daemon and prints its reattach line, which carries
# its name; stop it once read.
coproc plugin { OVSPLANE_PLUGIN_DEBUG=1 exec "$bin" 2>/dev/null; }
line=
read -r -t 20 line <&"${plugin[0]}" || true
kill "$plugin_PID" 2>/dev/null || true
wait "$plugin_PID" 2>/dev/null || true
name=$(sed -n 's/.*"plugin":"\([a-z][a-z0-9-]*\)".*/\1/p' <<<"$line")
[ -n "$name" ] || { echo "plugin-dev: $bin printed no reattach line in debug mode: does its main call sdk.Serve, with nothing on stdout before?" >&2; exit 1; }

# yaml_quote quotes a value as a single-quoted YAML scalar: any path is written as it is.
yaml_quote() { local v=${1//\'/\'\'}; printf "'%s'" "${v//$'\n'/ }"; }

cfg=$run/ovsplaned.yaml
{
  echo "# written by scripts/plugin-dev.sh"
  echo "log: {level: info, format: text}"
  echo "plugin_dir: $(yaml_quote "$run/plugins")"
  echo "plugins:"
  echo "  - name: $name"
  echo "    path: ovsplane-plugin-dev"
  echo "    sha256: $sum"
  echo "bridges:"
  echo "  - name: br0"
  echo "    datapath_type: netdev"
  if [ -n "$type" ]; then
    echo "    ports:"
    echo "      - name: dev0"
    echo "        interfaces: [{name: dev0, type: $type}]"
  fi
} >"$cfg"
echo "plugin-dev: plugin $name (sha256 $sum) in $run/plugins" >&2
echo "$cfg"
