#!/usr/bin/env bash
# RPC across 2 simulated hosts on a 2 Gbit/s link (issue 54): network namespaces on a
# bridge, each host's link shaped by tc tbf (tests/cluster). In one run, on 1 MiB each way:
#   - a raw TCP ping-pong between the hosts, written in the benchmark (bench_rpc_floor);
#   - rpc_sync echoing 1 MiB between the hosts on each of our transports (rpc-ping).
# A sequential echo uses one direction of the link at a time, so its best is 2 MiB per
# round trip at the link's rate: each figure is printed as that fraction of the link
# ("link_share", target >= 0.9 for rpc_sync), and as the ratio to the raw ping-pong.
# Needs root (namespaces); exits 77 where they cannot be made.
#   run_rpc_link.sh BUILD_DIR [RATE_GBIT]
set -euo pipefail
build=$(readlink -f "$1")
gbit=${2:-2}
here=$(dirname "$(readlink -f "$0")")/../cluster
source "$here/with_cluster.sh" 2 "${gbit}gbit"
bytes=$((1 << 20))
calls=40
cmake --build "$build" --target bench_rpc_floor >/dev/null  # benchmarks are not in the default build
floor=$build/tests/bench/bench_rpc_floor
ip netns exec ddps-h1 "$floor" --echo-server 7311 $bytes $calls &
raw=$(ip netns exec ddps-h0 "$floor" --echo-client 10.77.0.11 7311 $bytes $calls)
wait
results="\"raw_tcp\": $raw"
for t in shm tcp zmq; do
  line=$(DDPSCOPE_RPC_TRANSPORT=$t timeout 300 "$build/bin/ddpscope-cli" rpc-ping --np 2 --hostfile "$work/hosts" \
    --calls $calls --echo-bytes $bytes --bytes $bytes --json 2>"$work/err.$t" | grep '^{' | tail -1) ||
    { cat "$work/err.$t"; exit 1; }
  results="$results, \"$t\": $line"
done
/usr/bin/python3 - "$gbit" "{$results}" <<'PY'
import json, sys
gbit, r = float(sys.argv[1]), json.loads(sys.argv[2])
link_bytes_per_us = gbit * 1e9 / 8 / 1e6
best_us = 2 * r["raw_tcp"]["bytes"] / link_bytes_per_us  # both directions, one after the other
out = {"link_gbit": gbit, "bytes": r["raw_tcp"]["bytes"], "best_round_trip_us": round(best_us, 1),
       "raw_tcp_round_trip_us": r["raw_tcp"]["round_trip_us"],
       "raw_tcp_link_share": round(best_us / r["raw_tcp"]["round_trip_us"], 3)}
for t in ("shm", "tcp", "zmq"):
    us = r[t]["median_round_trip_us"]
    out[f"rpc_sync_{t}_round_trip_us"] = us
    out[f"rpc_sync_{t}_link_share"] = round(best_us / us, 3)
    out[f"rpc_sync_{t}_ratio_to_raw_tcp"] = round(us / r["raw_tcp"]["round_trip_us"], 3)
out["target_link_share"] = 0.9
print(json.dumps(out, indent=1))
PY
