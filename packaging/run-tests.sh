#!/usr/bin/env bash
# README command 2 (and CI): install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash packaging/build.sh
bash tests/packaging/check_configure_twice.sh build
export QT_QPA_PLATFORM=offscreen
# Two tests more than cores: most of the suite waits (on timeouts, mpirun, Python starting,
# simulated links), so at -j3 the two cores were busy 1.48 of the time (785 s of CPU in
# 531 s); -j4 took the suite to 496 s here (docs/building.md). Tests that must run alone
# say so (RUN_SERIAL).
ctest --test-dir build --output-on-failure -j"$(($(nproc 2>/dev/null || echo 2) + 2))" --timeout 600
