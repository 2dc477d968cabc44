#!/usr/bin/env bash
# Builds the test suite, the CLI and the fuzz replay under AddressSanitizer
# (leak detection on) and UndefinedBehaviorSanitizer in build-asan/ and runs
# them with ctest: any report fails its test. scripts/run_tests.sh (CI)
# calls it after the ordinary suite; extra arguments go to ctest.
#
# Made cheap to build, since CI builds it from nothing: -O1 -g0 for what
# is instrumented (cmake/sanitizers.cmake; a report's stack names
# functions, not lines: add -g1 by hand for those), the test files compiled
# as in the ordinary build (not instrumented), only the targets the tests
# run (no benchmarks, no Python module).
# No unity build: the op definitions
# (ops/defs/) and the test files each define file-local helpers of the
# same names (Check, Execute, ...), which collide when batched. Not here:
# the Python tests and the install test, which run the ordinary build's
# module and package (a sanitized library needs its runtime loaded first).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-asan
if [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DNKIGRAPH_PYTHON=OFF -DNKIGRAPH_SANITIZE=address,undefined >/dev/null
fi
# Everything the configuration builds: the tests (the MPI ones where MPI was
# found), the CLI they run and the fuzz replay; not the benchmarks.
cmake --build "$build" -j "$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
