#!/usr/bin/env bash
# The main job: set up, build, then for every registered kernel at its
# default parameters trace it to out/<kernel>.pb, replay it on the
# interpreter against its C++ reference (inputs, outputs and reference
# outputs under out/<kernel>/), render its dataflow and barrier
# diagrams to out/<kernel>.svg and out/<kernel>.barrier.svg, and write
# its `nkigraph view` page to out/<kernel>.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
nkigraph=build/tools/nkigraph
out=${1:-out}
mkdir -p "$out"

status=0
"$nkigraph" verify --all --out-dir "$out" || status=$?
if "$nkigraph" help dot >/dev/null 2>&1; then
  for kernel in $("$nkigraph" list --names); do
    "$nkigraph" dot "$out/$kernel.pb" -o "$out/$kernel.svg" || status=1
    "$nkigraph" dot "$out/$kernel.pb" --view barrier \
      -o "$out/$kernel.barrier.svg" || status=1
    "$nkigraph" view "$out/$kernel.pb" -o "$out/$kernel.html" || status=1
  done
else
  echo "main: this build has no 'dot' verb; diagrams skipped" >&2
fi
echo "main: outputs in $out/ ($(ls "$out" | wc -l) entries)"
exit "$status"
