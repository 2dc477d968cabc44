#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite with ctest, then the same
# suite under ASan and UBSan (scripts/asan_tests.sh; its build is cheap
# enough for CI's 25 minutes, see docs/performance.md). NKIGRAPH_ASAN=0 skips the
# sanitizer suite. Extra arguments go to every ctest run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [[ ${NKIGRAPH_ASAN:-1} != 0 ]]; then
  scripts/asan_tests.sh "$@"
fi
