#!/usr/bin/env bash
# CTest: the slow link found (issue 67). Four simulated hosts at 2 Gbit/s, host 2's link
# limited to 200 Mbit/s: a 4-rank DDP job with --measure-links. `links` must name rank 2 on
# ddps-h2 as the slow link, its measured links within 15% of 200 Mbit/s and the others'
# within 15% of 2 Gbit/s, and `why` must say so too. Then the same cluster without the slow
# link: no link named, every link within 15% of 2 Gbit/s. Then 4 hosts at 400 Mbit/s, a
# rate the links reach with the cores busy (at 2 Gbit/s a suite beside the test slowed the
# ring's steps below the network): the job said network-bound, by `why` and by the app's
# Summary (tst_links_page's case on this run), and again no link named.
# SKIP (77) where namespaces cannot be made.
#   check_slow_link.sh BUILD_DIR [slow|even|bound]   (all three when not given)
set -euo pipefail
build=$1
cases=${2:-slow even bound}
here=$(dirname "$(readlink -f "$0")")
fail() { echo "FAIL: $*" >&2; exit 1; }

run_case() {  # slow|even|bound
  local name=$1 run rate=2gbit
  if [ "$name" = slow ]; then export DDPS_CLUSTER_HOST_RATES=2=200mbit; else unset DDPS_CLUSTER_HOST_RATES; fi
  if [ "$name" = bound ]; then rate=400mbit; fi
  (
    source "$here/with_cluster.sh" 4 "$rate"
    run=$work/$name.ddprun
    timeout 300 "$build/bin/ddpscope-cli" train --np 4 --hostfile "$work/hosts" --collector-address 10.77.0.1 \
      --iters 6 --width 512 --depth 4 --batch 16 --measure-links --progress lines --log-every 10 --out "$run" \
      >"$work/out" 2>&1 || { cat "$work/out"; fail "the 4-host job ($name) failed"; }
    # Each step checked by hand: run_case is called beside `||`, where set -e does not act.
    "$build/bin/ddpscope-cli" links "$run" >"$work/links.txt" || fail "links failed"
    cat "$work/links.txt"
    "$build/bin/ddpscope-cli" links "$run" --json >"$work/links.json" || fail "links --json failed"
    "$build/bin/ddpscope-cli" why "$run" >"$work/why.txt" || fail "why failed"
    cat "$work/why.txt"
    "$build/bin/ddpscope-cli" why "$run" --json >"$work/why.json" || fail "why --json failed"
    /usr/bin/python3 - "$name" "$work" <<'PY' || exit 1
import json, sys
name, work = sys.argv[1], sys.argv[2]
report = json.load(open(f"{work}/links.json"))
why_text = open(f"{work}/why.txt").read()
why = json.load(open(f"{work}/why.json"))
assert report["measured"], "the run has no link test"
fast, slow_rate = (400e6 if name == "bound" else 2e9) / 8 / 1e9, 200e6 / 8 / 1e9  # GB/s
measured = [l for l in report["links"] if l["measured_gbps"] is not None]
assert len(measured) == 12, f"{len(measured)} links measured, expected 12 (6 pairs of 4 hosts, both ways)"
off = []
for l in measured:
    touches = name == "slow" and 2 in (l["src"], l["dst"])
    expected = slow_rate if touches else fast
    error = abs(l["measured_gbps"] - expected) / expected
    print(f"{l['src']}->{l['dst']} ({l['src_host']}->{l['dst_host']}): measured {l['measured_gbps'] * 8:.3f} Gbit/s, "
          f"configured {expected * 8:.3f} Gbit/s, off by {100 * error:.1f}%")
    if error > 0.15:
        off.append(f"{l['src']}->{l['dst']} off by {100 * error:.0f}%")
assert not off, "measured ceilings not within 15% of the configured rates: " + ", ".join(off)
hosts = {(l["src_host"], l["dst_host"]) for l in report["host_links"]}
assert len(hosts) == 12, f"host pairs {sorted(hosts)}"
if name == "slow":
    s = report["slow"]
    assert s is not None, "no slow link named"
    assert s["culprit"] == "rank" and s["rank"] == 2 and s["host"] == "ddps-h2", s
    assert "rank 2's link (host ddps-h2) runs at" in s["text"] and "every allreduce waits for it" in s["text"], s["text"]
    assert "rank 2's link (host ddps-h2)" in why_text, why_text
    assert why["slow_link"]["rank"] == 2, why.get("slow_link")
    assert why["network_bound"] is None, why["network_bound"]  # the slow link is the finding
else:
    assert report["slow"] is None, report["slow"]
    assert "Slow link" not in why_text, why_text
    assert why.get("slow_link") is None, why.get("slow_link")
if name == "bound":
    # Every link at 400 Mbit/s and a small model: the network is the limit, and said so.
    nb = why["network_bound"]
    assert nb is not None and nb["share"] >= 0.7, nb
    assert "The job is network-bound" in why_text, why_text
print(f"PASS ({name})")
PY
    if [ "$name" = bound ] && [ -x "$build/tests/gui_tests" ]; then
      # The app says it too: the Summary's Network: line on this real run.
      DDPSCOPE_NETWORK_BOUND_RUN=$run QT_QPA_PLATFORM=offscreen \
        "$build/tests/gui_tests" tst_links_page testANetworkBoundRunSaysSoInTheSummary \
        || fail "the Summary does not say the job is network-bound"
    fi
  )
}
# A case that a burst of other work threw off (a link test's three exchanges all slowed by a
# test beside it: once, 2->3 read 1.64 Gbit/s while its 11 peers read 1.89-1.94) is run
# once more on a new cluster, and the second must pass whole.
for c in $cases; do
  run_case "$c" || { echo "trying the $c case once more"; run_case "$c"; }
done
echo "PASS"
