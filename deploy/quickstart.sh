#!/usr/bin/env bash
# One command from a fresh clone to a comparison table:
#   installs dependencies, builds, starts a local controller (SQLite) and a local agent,
#   submits examples/ebizzy-mmap-vs-malloc.yaml, waits for it and prints the comparison.
#
#   deploy/quickstart.sh [SPEC.yaml]     run (default: the ebizzy example)
#   deploy/quickstart.sh stop            stop the local controller and agent
#
# Environment: TLBFLEET_HOME (state, default <repo>/.tlbfleet), TLBFLEET_GRPC_PORT (7070),
# TLBFLEET_HTTP_PORT (8080), TLBFLEET_SKIP_DEPS=1 to skip the apt step.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
home=${TLBFLEET_HOME:-$repo/.tlbfleet}
grpc_port=${TLBFLEET_GRPC_PORT:-7070}
http_port=${TLBFLEET_HTTP_PORT:-8080}
bin=$repo/build/bin
controller_addr=127.0.0.1:$grpc_port

say() { printf '\033[1mquickstart:\033[0m %s\n' "$*" >&2; }
die() { printf 'quickstart: error: %s\n' "$*" >&2; exit 1; }

stop_daemons() {
  local name pid
  for name in agent controller; do
    if [[ -f $home/$name.pid ]]; then
      pid=$(cat "$home/$name.pid")
      if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        say "stopped $name (pid $pid)"
      fi
      rm -f "$home/$name.pid"
    fi
  done
}

running() { [[ -f $home/$1.pid ]] && kill -0 "$(cat "$home/$1.pid")" 2>/dev/null; }

if [[ ${1:-} == stop ]]; then
  stop_daemons
  exit 0
fi
spec=${1:-$repo/examples/ebizzy-mmap-vs-malloc.yaml}
[[ -r $spec ]] || die "cannot read run spec $spec"

if [[ ${TLBFLEET_SKIP_DEPS:-0} != 1 ]]; then
  say "installing dependencies (deploy/install-deps.sh)"
  "$repo/deploy/install-deps.sh"
fi

say "building (cmake --preset default; this takes several minutes the first time)"
cmake --preset default -S "$repo" -DTLBFLEET_DASHBOARD=ON >/dev/null
cmake --build "$repo/build" --target tlbfleet-controller tlbfleet-agent tlbfleet tlbfleet-bench
# The web dashboard (build/dashboard/dist, served by the controller at /); needs node >= 20.19.
if ninja -C "$repo/build" -t query dashboard >/dev/null 2>&1; then
  cmake --build "$repo/build" --target dashboard
else
  say "no dashboard: it needs node >= 20.19 and npm (see deploy/install-deps.sh)"
fi

mkdir -p "$home/agent-state"
if running controller; then
  say "controller already running (pid $(cat "$home/controller.pid")), reusing it"
else
  say "starting controller on $controller_addr (db $home/fleet.db, log $home/controller.log)"
  rm -f "$home/controller.ready"
  nohup "$bin/tlbfleet-controller" --grpc-listen "$controller_addr" \
    --http-listen "127.0.0.1:$http_port" --db "$home/fleet.db" \
    --ready-file "$home/controller.ready" >>"$home/controller.log" 2>&1 &
  echo $! >"$home/controller.pid"
  for _ in $(seq 100); do [[ -s $home/controller.ready ]] && break; running controller || break; sleep 0.1; done
  [[ -s $home/controller.ready ]] || die "controller did not start; see $home/controller.log:
$(tail -5 "$home/controller.log")"
fi

# A controller whose database holds no API token runs in development mode (loopback only,
# nothing authenticated). Once someone has created a token, the local agent and this script
# need tokens of their own: make them once, readable only by us.
token_args=()
if [[ -n $("$bin/tlbfleet-controller" token list --db "$home/fleet.db" --format json) ]]; then
  for role in agent operator; do
    if [[ ! -s $home/$role.token ]]; then
      say "the database holds API tokens: creating a $role token for quickstart ($home/$role.token)"
      (umask 077 && "$bin/tlbfleet-controller" token create --db "$home/fleet.db" --role "$role" \
        --name "quickstart-$role-$(date +%s)" | tail -n 1 >"$home/$role.token")
    fi
  done
  token_args=(--token-file "$home/agent.token")
  TLBFLEET_TOKEN=$(cat "$home/operator.token")
  export TLBFLEET_TOKEN
fi

if running agent; then
  say "agent already running (pid $(cat "$home/agent.pid")), reusing it"
else
  # The agent runs as root and will one day reboot hosts on a plan's request: keep it in its
  # own PID namespace here, where reboot(2) can only end the namespace, never this machine.
  launcher=()
  if [[ $(id -u) -eq 0 ]] && command -v unshare >/dev/null; then
    launcher=(unshare --pid --fork --kill-child --mount-proc)
  fi
  say "starting local agent (state $home/agent-state, log $home/agent.log)"
  nohup "${launcher[@]}" "$bin/tlbfleet-agent" --controller "$controller_addr" \
    --state-dir "$home/agent-state" --label quickstart=1 "${token_args[@]}" >>"$home/agent.log" 2>&1 &
  echo $! >"$home/agent.pid"
fi

export TLBFLEET_CONTROLLER=$controller_addr
for _ in $(seq 100); do
  if "$bin/tlbfleet" hosts --format json 2>/dev/null | grep -q '"connected": true'; then break; fi
  sleep 0.2
done
"$bin/tlbfleet" hosts

say "submitting $spec"
run_id=$("$bin/tlbfleet" submit "$spec" | tail -n 1)
say "run $run_id submitted; waiting (progress below)"
status=0
"$bin/tlbfleet" wait "$run_id" || status=$?
echo
"$bin/tlbfleet" compare "$run_id" || true
echo
cat >&2 <<MSG
Database:   $home/fleet.db  (sqlite3 $home/fleet.db 'SELECT * FROM samples LIMIT 5')
Logs:       $home/controller.log, $home/agent.log
Results:    TLBFLEET_CONTROLLER=$controller_addr $bin/tlbfleet results $run_id --format csv
Dashboard:  http://127.0.0.1:$http_port/runs/$run_id  (development mode: loopback, no token yet)
Daemons:    controller pid $(cat "$home/controller.pid"), agent pid $(cat "$home/agent.pid") — still running
Stop them:  deploy/quickstart.sh stop
MSG
exit $status
