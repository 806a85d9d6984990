#!/usr/bin/env bash
# A simulated cluster for the tests and benchmarks: N hosts as network namespaces on a
# bridge, optionally with a bandwidth limit (tbf) on each host's link, and OpenMPI
# launching into them through this script as its rsh agent.
#
#   cluster.sh up N [RATE]      make hosts ddps-h0..h(N-1) (RATE e.g. 2gbit; none: unlimited);
#                               DDPS_CLUSTER_SIDE_NET=1 gives each a second, private network;
#                               DDPS_CLUSTER_HOST_RATES="2=200mbit[,I=RATE...]" gives host I's
#                               link its own rate (a slow link)
#   cluster.sh down             remove everything `up` made
#   cluster.sh hosts N          the --host list for mpirun (the hosts' addresses)
#   cluster.sh mca              the --mca options that keep OpenMPI on the bridge
#   cluster.sh agent HOST CMD   run CMD in HOST's namespace (OpenMPI's plm_rsh_agent)
#   cluster.sh check            exit 0 if namespaces can be made here, 77 (SKIP) otherwise
#
# Host i is 10.77.0.(10+i) on bridge ddps-br0 (10.77.0.1); /etc/netns/ddps-hI/hosts names
# every host inside the namespaces. Only these addresses and loopback see test traffic.
set -euo pipefail
self=$(readlink -f "$0")
bridge=ddps-br0
subnet=10.77.0
addr() { echo "$subnet.$((10 + $1))"; }

check() {
  [ "$(id -u)" = 0 ] || { echo "SKIP: the simulated cluster needs root (network namespaces)"; exit 77; }
  command -v ip >/dev/null || { echo "SKIP: the simulated cluster needs ip (iproute2)"; exit 77; }
  ip netns add ddps-probe 2>/dev/null || { echo "SKIP: network namespaces cannot be made here"; exit 77; }
  ip netns del ddps-probe
}

down() {
  # The veths first: a deleted namespace takes its end of the pair down asynchronously,
  # and an `up` right after met the old ddps-vN still there ("File exists").
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed -n 's/^\(ddps-v[0-9]*\)@.*/\1/p'); do
    ip link del "$link" 2>/dev/null || true
  done
  for ns in $(ip netns list 2>/dev/null | awk '/^ddps-h[0-9]+/ {print $1}'); do
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
  done
  ip link del "$bridge" 2>/dev/null || true
  # The simulated hosts' OpenMPI session directories: a daemon cut off with its host (the
  # host-cut fault) leaves its own (~8 MB) for good, one more each suite run.
  rm -rf "${TMPDIR:-/tmp}"/ompi.ddps-h[0-9]*.* 2>/dev/null || true
}

up() {
  local n=$1 rate=${2:-}
  down
  ip link add "$bridge" type bridge
  ip addr add "$subnet.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq 0 $((n - 1))); do
    local ns=ddps-h$i
    ip netns add "$ns"
    if [ "${DDPS_CLUSTER_SIDE_NET:-0}" = 1 ]; then
      # A second network only this host is on (a veth pair inside it), made before
      # eth0 so it is listed first: whatever listens on "the first address" is
      # unreachable from the other hosts.
      ip -n "$ns" link add side0 type veth peer name side1
      ip -n "$ns" addr add "10.78.$i.10/24" dev side0
      ip -n "$ns" link set side0 up
      ip -n "$ns" link set side1 up
    fi
    ip link add "ddps-v$i" type veth peer name eth0 netns "$ns"
    ip link set "ddps-v$i" master "$bridge" up
    ip -n "$ns" addr add "$(addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    local host_rate=$rate
    for entry in $(echo "${DDPS_CLUSTER_HOST_RATES:-}" | tr ',' ' '); do
      if [ "${entry%%=*}" = "$i" ]; then host_rate=${entry#*=}; fi
    done
    if [ -n "$host_rate" ]; then
      # Each host's link, both ways: egress inside the host, ingress on the bridge side.
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$host_rate" burst 256kb latency 50ms
      tc qdisc add dev "ddps-v$i" root tbf rate "$host_rate" burst 256kb latency 50ms
    fi
    mkdir -p "/etc/netns/$ns"
    {
      echo "127.0.0.1 localhost"
      for j in $(seq 0 $((n - 1))); do echo "$(addr "$j") ddps-h$j"; done
      echo "$subnet.1 ddps-launcher"
    } >"/etc/netns/$ns/hosts"
    echo "ddps-h$i" >"/etc/netns/$ns/hostname"
  done
}

hosts() {
  local n=$1 list=""
  for i in $(seq 0 $((n - 1))); do list="$list${list:+,}$(addr "$i")"; done
  echo "$list"
}

# OpenMPI calls the agent as: AGENT [options] HOST COMMAND...; options it may add
# (-x, -o ...) are ignored here.
agent() {
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
  local host=$1
  shift
  local ns=""
  for entry in /etc/netns/ddps-h*; do
    local name=${entry##*/}
    if [ "$host" = "$name" ] || [ "$host" = "$(addr "${name#ddps-h}")" ]; then ns=$name; fi
  done
  [ -n "$ns" ] || { echo "cluster.sh agent: no simulated host '$host'" >&2; exit 1; }
  # Its own host name too (a UTS namespace), so each rank reports the host it runs on.
  exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns && $*"
}

mca() {
  echo "--mca plm_rsh_agent $(dirname "$self")/agent.sh --mca oob_tcp_if_include $subnet.0/24 --mca btl_tcp_if_include $subnet.0/24 --mca btl tcp,self"
}

cmd=${1:-}
shift || true
case "$cmd" in
  up) up "$@" ;;
  down) down ;;
  hosts) hosts "$@" ;;
  mca) mca ;;
  agent) agent "$@" ;;
  check) check ;;
  *) sed -n '2,16p' "$self"; exit 2 ;;
esac
