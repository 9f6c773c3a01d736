#!/usr/bin/env bash
# `cmake --install` of a built tree into a fresh prefix puts the binaries, the documentation,
# the systemd units and the built dashboard where they belong, and the installed controller
# serves the installed dashboard at / with no --dashboard-dir.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail

build=$1
prefix=$(mktemp -d /tmp/tlbfleet-install-test.XXXXXX)
pid=
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$prefix"
}
trap cleanup EXIT

cmake --install "$build" --prefix "$prefix" >"$prefix.install.log" 2>&1 || {
  cat "$prefix.install.log"
  exit 1
}
rm -f "$prefix.install.log"
for f in bin/tlbfleet bin/tlbfleet-controller bin/tlbfleet-agent \
  share/tlbfleet/dashboard/index.html share/doc/tlbfleet/operations.md \
  share/doc/tlbfleet/agent.md share/tlbfleet/systemd/tlbfleet-controller.service; do
  if [[ ! -e $prefix/$f ]]; then
    echo "FAIL: $f is not installed under $prefix"
    exit 1
  fi
done

"$prefix/bin/tlbfleet-controller" --db "$prefix/fleet.db" --grpc-listen 127.0.0.1:0 \
  --http-listen 127.0.0.1:0 --ready-file "$prefix/ready.json" >"$prefix/controller.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  [[ -s $prefix/ready.json ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$prefix/controller.log"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/.*"http_port":\([0-9]*\).*/\1/p' "$prefix/ready.json")
[[ -n $port ]] || { echo "FAIL: no http_port in $(cat "$prefix/ready.json")"; exit 1; }

# GET / over bash's /dev/tcp (no HTTP client needed).
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
response=$(cat <&3)
exec 3<&-

status=$(head -n1 <<<"$response")
if [[ $status != *" 200 "* ]]; then
  echo "FAIL: GET / answered: $status"
  echo "$response" | head -20
  cat "$prefix/controller.log"
  exit 1
fi
if ! grep -q '<script type="module"[^>]* src="/assets/' <<<"$response"; then
  echo "FAIL: GET / is not the dashboard's index.html:"
  echo "$response" | head -40
  exit 1
fi
if ! grep -q "dashboard: $prefix/share/tlbfleet/dashboard" "$prefix/controller.log"; then
  echo "FAIL: the controller did not say it serves the installed dashboard:"
  cat "$prefix/controller.log"
  exit 1
fi
echo "PASS: installed under $prefix; the installed controller serves its dashboard at /"
