#!/usr/bin/env bash
# Builds the test suite and the CLI under AddressSanitizer (leak detection
# on) and UndefinedBehaviorSanitizer in build-asan/ (gcc, -O1, compiler
# cache shared with the ordinary build's toolchain) and runs it with ctest:
# any report fails its test. scripts/run_tests.sh calls it after the
# ordinary suite; extra arguments go to ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-asan
if [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1" -DCMAKE_C_FLAGS_RELEASE="-O1" \
    -DNKIGRAPH_SANITIZE=address,undefined >/dev/null
fi
# The tests, the CLI they run and the fuzz replay; not the benchmarks.
cmake --build "$build" -j "$(nproc)" --target nkigraph_tests nkigraph \
  nkigraph_fuzz_replay

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
