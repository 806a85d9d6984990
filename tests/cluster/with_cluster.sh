# Sourced by the cluster tests: makes N simulated hosts (cluster.sh up N [RATE]), a
# hostfile for them in $work/hosts, OpenMPI's settings for launching into them, and the
# clean-up when the test exits. Exits 77 (SKIP) where namespaces cannot be made.
#   here=...; source "$here/with_cluster.sh" N [RATE]
cluster=$here/cluster.sh
bash "$cluster" check || exit $?
work=$(mktemp -d)
cleanup() {
  bash "$cluster" down
  rm -rf "$work"
}
trap cleanup EXIT
bash "$cluster" up "$@"
for h in $(bash "$cluster" hosts "$1" | tr ',' ' '); do echo "$h slots=1"; done >"$work/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=$here/agent.sh
export OMPI_MCA_oob_tcp_if_include=10.77.0.0/24 OMPI_MCA_btl_tcp_if_include=10.77.0.0/24 OMPI_MCA_btl=tcp,self
