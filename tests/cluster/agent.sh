#!/usr/bin/env bash
# OpenMPI's plm_rsh_agent for the simulated cluster (one path, no spaces: OpenMPI splits
# the agent's value on ':' and ' '): runs the command in the host's namespace.
exec "$(dirname "$(readlink -f "$0")")/cluster.sh" agent "$@"
