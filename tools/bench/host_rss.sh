#!/usr/bin/env bash
# Memory of `vkube host` with many simulated GPU nodes (issue 6: 10,000 nodes
# in < 500 MiB). Starts the host, waits until every node exists, lets it idle
# while leases renew, and prints its resident and peak memory.
#   tools/bench/host_rss.sh [NODES] [IDLE_SECONDS] [VKUBE_BINARY]
set -euo pipefail
nodes=${1:-10000}
idle=${2:-20}
vkube=${3:-$(dirname "$0")/../../build/vkube}
kubectl=$(command -v kubectl || echo /usr/bin/kubectl)
[ -x "$(dirname "$0")/../../.tools/bin/kubectl" ] && kubectl=$(dirname "$0")/../../.tools/bin/kubectl
dir=$(mktemp -d /tmp/vkube-host-rss-XXXXXX)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT

start=$(date +%s.%N)
"$vkube" host --data-dir "$dir/data" --listen 127.0.0.1:0 --nodes "$nodes" --gpus-per-node 8 \
  --log-level warn >"$dir/out" 2>"$dir/log" &
pid=$!
until grep -q "vkube is serving" "$dir/out" 2>/dev/null; do
  kill -0 $pid 2>/dev/null || { cat "$dir/log"; exit 1; }
  sleep 0.1
done
ready=$(date +%s.%N)
export KUBECONFIG=$dir/data/admin.kubeconfig
count=$("$kubectl" get nodes -l vkube.io/simulated=true --no-headers 2>/dev/null | wc -l)
gpus=$("$kubectl" get --raw /metrics | awk '/^vkube_cluster_gpu_capacity_milli/ {print $2/1000}')
sleep "$idle"
cpu_ticks_before=$(awk '{print $14+$15}' /proc/$pid/stat)
sleep 10
cpu_ticks_after=$(awk '{print $14+$15}' /proc/$pid/stat)
rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
hz=$(getconf CLK_TCK)
printf 'vkube host with %s simulated nodes (%s GPUs) up in %.2f s\n' "$count" "$gpus" "$(awk "BEGIN {print $ready - $start}")"
printf 'RSS after %s s idle: %d MiB (peak %d MiB)  target < 500 MiB: %s\n' "$idle" $((rss / 1024)) $((hwm / 1024)) \
  "$([ $((rss / 1024)) -lt 500 ] && echo ok || echo MISS)"
printf 'idle CPU over 10 s: %.1f%% of one core\n' "$(awk "BEGIN {print ($cpu_ticks_after - $cpu_ticks_before) * 100 / $hz / 10}")"
