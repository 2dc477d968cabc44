#!/usr/bin/env bash
# Builds one libFuzzer target with clang under ASan and UBSan (its own
# build directory, build-fuzz/) and fuzzes it:
#
#   scripts/fuzz.sh TARGET [--seconds N | --runs M] [--corpus DIR]
#                   [-- LIBFUZZER_FLAGS...]
#   scripts/fuzz.sh TARGET --replay FILE...   # run the given inputs once
#
# TARGET: graph, text, npy, bundle, diff or viz (fuzz/harness.h). Default:
# 60 seconds, inputs of at most 4 KiB (16 KiB for text; -max_len: a bigger
# graph only slows every execution), libFuzzer's plain scheduler
# (-entropic=0: the entropic one spent 44% of a graph run's time updating
# its feature frequencies; 695 executions/s with it, 2,039 without). The corpus is DIR/TARGET (default build-fuzz/corpus;
# /dev/shm keeps its many small writes off the disk), seeded on first use
# by scripts/fuzz_seeds.sh; a crash, hang (over 10 s), leak, out-of-memory
# (over 2 GiB) or sanitizer report stops the run and leaves its input in
# build-fuzz/findings/TARGET/. Once the library is fixed, copy the input to
# tests/fuzz_regressions/TARGET/ under a name that says what it was: the
# ordinary test suite (nkigraph_fuzz_replay) replays every file there.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
target=$1
shift
case "$target" in
  graph | text | npy | bundle | diff | viz) ;;
  *) echo "fuzz: unknown target '$target'" >&2; usage ;;
esac
limit=(-max_total_time=60)
replay=()
corpus_root=build-fuzz/corpus
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) limit=(-max_total_time="$2"); shift 2 ;;
    --runs) limit=(-runs="$2"); shift 2 ;;
    --corpus) corpus_root=$2; shift 2 ;;
    --replay) shift; replay=("$@"); break ;;
    --) shift; break ;;
    *) usage ;;
  esac
done

# The toolchain: clang and its runtime (libFuzzer and the sanitizers).
missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "fuzz: install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

build=build-fuzz
if [[ ! -f $build/build.ninja ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" \
    -DNKIGRAPH_FUZZ=ON -DNKIGRAPH_SANITIZE=address,undefined >/dev/null
fi
ninja -C "$build" "fuzz_$target"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:symbolize=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
binary="$build/fuzz/fuzz_$target"
if ((${#replay[@]})); then
  exec "$binary" -timeout=10 -rss_limit_mb=2048 "${replay[@]}"
fi

corpus="$corpus_root/$target"
if [[ -z "$(ls -A "$corpus" 2>/dev/null)" ]]; then
  scripts/fuzz_seeds.sh "$corpus_root"
fi
max_len=4096
[[ $target == text ]] && max_len=16384
findings="$build/findings/$target"
mkdir -p "$findings"
exec "$binary" -artifact_prefix="$findings/" -timeout=10 -rss_limit_mb=2048 \
  -max_len="$max_len" -entropic=0 -print_final_stats=1 "${limit[@]}" "$@" \
  "$corpus"
