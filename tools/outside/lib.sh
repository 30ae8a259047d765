#!/usr/bin/env bash
# Shared by the outside-suite runners: start a fresh `vkube serve` tenant on
# loopback and make sure every process a runner starts dies with it.
#
#   source tools/outside/lib.sh
#   outside::start_tenant DIR     # sets TENANT_URL, TENANT_KUBECONFIG, TENANT_PID
#   outside::stop_tenant
#
# VKUBE (default build/vkube) picks the binary.

OUTSIDE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VKUBE="${VKUBE:-$OUTSIDE_ROOT/build/vkube}"
export PATH="$OUTSIDE_ROOT/.tools/bin:$PATH"

OUTSIDE_PIDS=()

# Copies the vkube binary into DIR and uses the copy: others may relink
# build/vkube while a suite runs (a half-written binary fails every tenant).
outside::snapshot_binary() {
  local dir="$1"
  if [ ! -s "$VKUBE" ] || [ ! -x "$VKUBE" ]; then
    echo "outside: $VKUBE is missing or empty (being linked?); build it first" >&2
    return 2
  fi
  cp "$VKUBE" "$dir/vkube"
  VKUBE="$dir/vkube"
}

# Kills what this runner started (by id, children first), on every exit path.
outside::cleanup() {
  local pid
  for pid in "${OUTSIDE_PIDS[@]}"; do
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${OUTSIDE_PIDS[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  OUTSIDE_PIDS=()
}
trap outside::cleanup EXIT
trap 'exit 130' INT TERM

# Starts `vkube serve` with its state in DIR on a free loopback port and waits
# for its "vkube is serving URL" line.
outside::start_tenant() {
  local dir="$1"
  shift
  mkdir -p "$dir"
  "$VKUBE" serve --data-dir "$dir/data" --listen 127.0.0.1:0 --log-level warn "$@" \
    >"$dir/server.out" 2>"$dir/server.log" &
  TENANT_PID=$!
  OUTSIDE_PIDS+=("$TENANT_PID")
  local i
  for i in $(seq 1 300); do
    if grep -q "vkube is serving " "$dir/server.out" 2>/dev/null; then
      TENANT_URL="$(sed -n 's/.*vkube is serving \([^ ]*\).*/\1/p' "$dir/server.out" | head -1)"
      TENANT_KUBECONFIG="$dir/data/admin.kubeconfig"
      [ -f "$TENANT_KUBECONFIG" ] && return 0
    fi
    kill -0 "$TENANT_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "outside: vkube serve did not come up (see $dir/server.log)" >&2
  cat "$dir/server.log" >&2
  return 1
}

outside::stop_tenant() {
  [ -n "${TENANT_PID:-}" ] || return 0
  kill -TERM "$TENANT_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$TENANT_PID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$TENANT_PID" 2>/dev/null || true
  wait "$TENANT_PID" 2>/dev/null || true
  TENANT_PID=""
}
