#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets (fuzz/harness.h) into
# OUT/<target>/ (default build-fuzz/corpus): the golden graphs traced to
# binary and a few tiny kernels, their text form, replay bundles and .npy
# files from running them, pairs of them for diff and option prefixes for
# viz. Small seeds only: graphs over 24 KiB binary are left out (they slow
# every execution and add little coverage). Uses the ordinary build's CLI
# (build/, built here if needed).
#
#   scripts/fuzz_seeds.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-build-fuzz/corpus}"
build_dir="${BUILD_DIR:-build}"
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$build_dir" nkigraph >/dev/null
cli="$build_dir/tools/nkigraph"

max_graph_bytes=24576
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"/{graph,text,npy,bundle,diff,viz}

keep_small() {  # keep_small FROM TO MAX_BYTES: copies FROM if small enough
  (($(stat -c %s "$1") <= $3)) && cp "$1" "$2"
  return 0
}

# 1. Graphs: every golden configuration, and tiny kernels at the edges of
# their parameters.
configs=()
while read -r kernel config params; do
  [[ -z "${kernel:-}" || "$kernel" == \#* ]] && continue
  configs+=("$kernel ${kernel}_$config $params")
done < tests/golden/configs.txt
configs+=(
  "tiled_matmul tiny_mm m=1 k=1 n=1"
  "tiled_matmul tiny_relu m=3 k=129 n=2 activation=relu dtype=float32"
  "fgcc tiny_fgcc tp_degree=2 m=4 k=8 n=4"
  "topk_reduce tiny_topk num_tokens=4 top_k=1 hidden=4 rows=8"
  "depthwise_conv1d tiny_dw batch=1 channels=1 width=4 kernel_size=2"
)
graphs=()
for line in "${configs[@]}"; do
  read -r kernel name params <<<"$line"
  args=()
  for p in $params; do args+=(--set "$p"); done
  if ! "$cli" trace "$kernel" "${args[@]}" -o "$work/$name.pb" >/dev/null; then
    echo "fuzz_seeds: cannot trace $kernel $params; no seed from it" >&2
    continue
  fi
  if (($(stat -c %s "$work/$name.pb") <= max_graph_bytes)); then
    graphs+=("$name")
    cp "$work/$name.pb" "$out/graph/$name.pb"
    "$cli" trace "$kernel" "${args[@]}" -o "$work/$name.pbtxt" >/dev/null
    keep_small "$work/$name.pbtxt" "$out/text/$name.pbtxt" 16384
  fi
done

# 2. Bundles and .npy files from running them (graphs that run within the
# harness's bounds; a run that fails leaves no seed).
for name in "${graphs[@]}"; do
  dir="$work/run_$name"
  if "$cli" run "$work/$name.pb" --random-inputs 1 --output-dir "$dir" \
      --save-bundle "$work/$name.bundle.pb" >/dev/null 2>&1; then
    keep_small "$work/$name.bundle.pb" "$out/bundle/$name.pb" "$max_graph_bytes"
    for npy in "$dir"/*.npy; do
      keep_small "$npy" "$out/npy/${name}_$(basename "$npy")" 4096
    done
  fi
done
"$cli" run "$work/tiny_relu.pb" --random-inputs 2 --raw-bits \
  --output-dir "$work/raw" --save-bundle "$out/bundle/raw_bits.pb" >/dev/null
for npy in "$work"/raw/*.npy; do
  keep_small "$npy" "$out/npy/raw_bits_$(basename "$npy")" 4096
done

# Hand-made .npy headers the runs do not write: versions 2 and 3, every
# accepted descr, 0-d, empty, Fortran order (refused).
npy() {  # npy FILE VERSION HEADER_DICT DATA_PRINTF
  local file=$1 version=$2 dict=$3 data=$4
  local prefix=10 lenbytes=2
  ((version > 1)) && prefix=12 && lenbytes=4
  local len=$(( ${#dict} + 1 ))
  local pad=$(( (64 - (prefix + len) % 64) % 64 ))
  local header
  header="$dict$(printf '%*s' "$pad" '')"$'\n'
  len=${#header}
  {
    printf "\x93NUMPY\\x$(printf %02x "$version")\x00"
    if ((lenbytes == 2)); then
      printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    else
      printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))\\x00\\x00"
    fi
    printf '%s' "$header"
    printf "$data"
  } >"$out/npy/$file"
}
npy f8_v2.npy 2 "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }" \
  '\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\xc0'
npy i8_v3.npy 3 "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }" \
  '\x05\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff'
npy u2_scalar.npy 1 "{'descr': '<u2', 'fortran_order': False, 'shape': (), }" \
  '\x80\x3f'
npy i4_empty.npy 1 "{'descr': '<i4', 'fortran_order': False, 'shape': (0, 3), }" ''
npy f4_fortran.npy 1 "{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }" \
  '\x00\x00\x80\x3f'
npy f4_nan.npy 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" \
  '\x01\x00\xc0\x7f\x00\x00\x80\xff\x01\x00\x00\x00'

# 3. Diff pairs: [options][length of A, 4 bytes little-endian][A][B].
pair() {  # pair OPTIONS A B
  local a="$work/$2.pb" b="$work/$3.pb" len
  [[ -f $a && -f $b ]] || return 0
  len=$(stat -c %s "$a")
  {
    printf "\\x$(printf %02x "$1")"
    printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $(((len >> 8) & 255)))"
    printf "\\x$(printf %02x $(((len >> 16) & 255)))\\x00"
    cat "$a" "$b"
  } >"$out/diff/$2-$3-$1"
}
pair 0 tiled_matmul_small tiled_matmul_f32_gelu_nobias
pair 1 tiled_matmul_small tiled_matmul_small
pair 6 fgcc_small fg_allgather_small
pair 3 sb2sb_allgather_small sb2sb_allgather_tiled_small
pair 0 conv1d_small depthwise_conv1d_small
pair 2 tiny_mm tiny_relu
pair 1 tiny_fgcc fgcc_small

# 4. Viz: [view byte][filter byte][graph]; both views, collapsed and not,
# with core, scope, instance and neighbourhood filters.
for name in "${graphs[@]}"; do
  for opts in '\x00\x00' '\x01\x00' '\xcb\x00' '\x3a\x41' '\x00\x46' '\x85\xc8'; do
    { printf "$opts"; cat "$work/$name.pb"; } \
      >"$out/viz/${name}_$(printf "$opts" | od -An -tx1 | tr -d ' ')"
  done
done

for target in graph text npy bundle diff viz; do
  echo "fuzz_seeds: $target: $(ls "$out/$target" | wc -l) seeds," \
    "$(du -sk "$out/$target" | cut -f1) KiB"
done
