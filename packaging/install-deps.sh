#!/usr/bin/env bash
# Installs the Debian 12 packages ddpscope needs to build, test and run its demo.
# Only calls apt-get when something is missing, so a second run costs nothing.
set -euo pipefail

packages=(
  cmake g++ make ninja-build pkg-config ca-certificates
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6sql6-sqlite
  libxkbcommon-dev  # Qt6Gui's CMake package looks for it: without, "Could NOT find XKB" at configure
  libopenmpi-dev openmpi-bin libopenblas-dev libsqlite3-dev sqlite3 libgraphviz-dev
  libzmq3-dev cppzmq-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libzstd-dev
  libspdlog-dev  # diagnostics (base/ddpscope/log.h)
  rapidjson-dev  # streaming (SAX) reader for PyTorch profiler traces; the exports' writer
  libdw-dev  # a stalled rank's native stacks' names (probes/runtime/native_stacks.h)
  xvfb xauth python3 python3-torch python3-sklearn
  procps bsdutils  # ps and script: the launcher and terminal tests use them
  dpkg-dev desktop-file-utils appstream  # the .deb (dpkg-shlibdeps) and its checks
  clang-14 libclang-rt-14-dev  # libFuzzer harnesses (tests/fuzz)
  clang-format-14  # the tree's layout (.clang-format, tests/style/check_format.sh)
  universal-ctags  # C++ function lengths (tests/style/check_sizes.py)
  iproute2 util-linux hostname  # the simulated cluster (tests/cluster): ip, tc, unshare
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing packages (${missing[*]}) and not root; install them as root or install sudo" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
