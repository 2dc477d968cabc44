#!/usr/bin/env bash
# The boundary sweep beyond CI's: every registered kernel with a reference
# at its boundary values (smallest legal, 1, default, either side of every
# tile size; every flag and choice, both dtypes) combined as the full
# product, or 3-wise where the product has more than 20,000 legal cases,
# each case traced, run and compared with the reference. Prints every case
# that fails or is refused, then the table (kernel, how combined, cases,
# passed, refused, failed, infeasible tuples). CI runs the pairwise sweep
# (tests/boundary_sweep_test.cc).
#
#   scripts/boundary_sweep.sh                    # product / 3-wise, all
#   scripts/boundary_sweep.sh pairwise           # what CI covers, all of it
#   scripts/boundary_sweep.sh product conv1d     # one kernel
set -euo pipefail
cd "$(dirname "$0")/.."

how="${1:-product}"
shift || true
build_dir="${BUILD_DIR:-build}"
cli="$build_dir/tools/nkigraph"
cmake --build "$build_dir" --target nkigraph >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
if (($# == 0)); then
  exec "$cli" verify --all --sweep "$how" --quiet
fi
for kernel in "$@"; do
  "$cli" verify "$kernel" --sweep "$how" --quiet
done
