#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite with ctest. With
# NKIGRAPH_ASAN=1, then the same suite under ASan and UBSan
# (scripts/asan_tests.sh; not by default: with it, CI's clean build would
# not yet fit its 20 minutes, see the README). Extra arguments go to every
# ctest run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [[ ${NKIGRAPH_ASAN:-0} == 1 ]]; then
  scripts/asan_tests.sh "$@"
fi
