#!/usr/bin/env bash
# Every C++ and CUDA file of the tree is laid out as .clang-format says (clang-format-14,
# the version Debian 12 ships: another version may format differently). On failure it
# names the files and how to fix them.
set -euo pipefail
source_dir=${1:?usage: check_format.sh SOURCE_DIR}
cd "$source_dir"
formatter=$(command -v clang-format-14 || true)
if [ -z "$formatter" ]; then
  echo "check_format: clang-format-14 is not installed; run bash packaging/install-deps.sh" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files and new ones not yet added (a new file was once committed unformatted:
  # the check had run before it was tracked).
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- engine probes gui base tests |
    grep -E '\.(cpp|h|cu|cuh)$' | sort -u)
else  # a source tarball: every such file below the folders
  mapfile -t files < <(find engine probes gui base tests -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no C++ files found under $source_dir" >&2
  exit 1
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done  # not those deleted but not yet committed
# One run over every file; each misplaced line is reported as FILE:LINE:COL: error: ...
mapfile -t bad < <("$formatter" --dry-run -Werror "${existing[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: error' | cut -d: -f1 | sort -u || true)
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix them with: clang-format-14 -i ${bad[*]}" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} files formatted"
