#!/usr/bin/env bash
# Regenerates the golden graphs in tests/golden/ after an intended change
# to a kernel or to tracing. Builds the nkigraph CLI, then traces every
# entry of tests/golden/configs.txt ("<kernel> <config> [param=value]...")
# to tests/golden/<kernel>_<config>.pbtxt.
#
#   scripts/regen_goldens.sh               # every entry; also deletes
#                                          # goldens no longer listed
#   scripts/regen_goldens.sh tiled_matmul  # only these kernels' entries
#   BUILD_DIR=build-rel scripts/regen_goldens.sh
#
# Review the result with `git diff tests/golden` (or `nkigraph diff` of the
# old and new file) and commit it together with the kernel change.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
golden_dir="tests/golden"
list="$golden_dir/configs.txt"

if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build_dir" --target nkigraph >/dev/null
cli="$build_dir/tools/nkigraph"

declare -A wanted=()
for kernel in "$@"; do wanted["$kernel"]=1; done

declare -A listed=()
count=0
while read -r kernel config params; do
  [[ -z "${kernel:-}" || "$kernel" == \#* ]] && continue
  if [[ -z "${config:-}" ]]; then
    echo "regen_goldens: $list: '$kernel' has no config name" >&2
    exit 2
  fi
  out="$golden_dir/${kernel}_${config}.pbtxt"
  listed["$out"]=1
  if [[ $# -gt 0 && -z "${wanted[$kernel]:-}" ]]; then continue; fi
  set_args=()
  for param in ${params:-}; do set_args+=(--set "$param"); done
  "$cli" trace "$kernel" "${set_args[@]}" -o "$out"
  count=$((count + 1))
done <"$list"

if [[ $# -eq 0 ]]; then
  for file in "$golden_dir"/*.pbtxt; do
    [[ -e "$file" ]] || continue
    if [[ -z "${listed[$file]:-}" ]]; then
      echo "regen_goldens: deleting $file (not listed in $list)"
      rm -f "$file"
    fi
  done
fi
echo "regen_goldens: wrote $count golden graph(s) in $golden_dir"
