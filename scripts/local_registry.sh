#!/usr/bin/env bash
# A throwaway image registry on 127.0.0.1 for proving the release path without GitHub
# (Debian package docker-registry, the reference "distribution" registry). dockerd
# treats registries on 127.0.0.0/8 as insecure (plain HTTP) by default, so no daemon
# configuration is needed.
#
#   scripts/local_registry.sh start DIR   start one on a free port; prints 127.0.0.1:PORT
#   scripts/local_registry.sh stop DIR    stop the one started with DIR
#
# DIR holds its config, storage, log, pid and address (DIR/address). Installs the
# package with apt-get when it is missing (as root, like .ci/run).
set -euo pipefail
cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then echo "usage: $0 start|stop DIR" >&2; exit 2; fi
python=${PYTHON:-python3}

# root here; GitHub's runners are a user with sudo
as_root() { if [ "$(id -u)" = "0" ]; then "$@"; else sudo "$@"; fi; }

case "$cmd" in
start)
  if ! command -v docker-registry >/dev/null 2>&1; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-registry >/dev/null 2>&1 \
      || { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -qq docker-registry >/dev/null; } \
      || { echo "could not install docker-registry (apt-get install docker-registry)" >&2; exit 1; }
  fi
  mkdir -p "$dir/storage"
  # a free port: bound by the kernel's choice, released, then taken by the registry
  port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  cat >"$dir/config.yml" <<CONFIG
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
CONFIG
  setsid docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  address="127.0.0.1:$port"
  # ready when /v2/ answers (the registry API's version check): at most 30 s
  if ! "$python" - "$address" <<'PY'
import sys, time, urllib.request
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(f"http://{sys.argv[1]}/v2/", timeout=2) as reply:
            if reply.status == 200:
                sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
PY
  then
    echo "the registry did not answer on $address within 30 s; see $dir/registry.log:" >&2
    tail -20 "$dir/registry.log" >&2 || true
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    exit 1
  fi
  echo "$address" >"$dir/address"
  echo "$address"
  ;;
stop)
  if [ -f "$dir/pid" ]; then
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    rm -f "$dir/pid"
  fi
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
