#!/usr/bin/env bash
# `nkigraph dot` at production sizes, both views, SVG and PNG: the sizes of
# docs/pictures.md's figures and the MoE sizes of issue 16 (too slow for CI; the
# golden and default sizes are tests/viz_robust_test.cc). For each picture:
# wall seconds, whether a fallback layout was needed, the PNG's size in
# pixels. Fails if any picture fails. Prints the load first: quote it with
# the numbers.
#
#   scripts/dot_production.sh            # pictures under out/dot_production
#   BUILD_DIR=build OUT=/tmp/dots scripts/dot_production.sh
#   GRAPHS="bwmm bwd" scripts/dot_production.sh   # only these graphs
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
out="${OUT:-out/dot_production}"
cli="$build_dir/tools/nkigraph"
mkdir -p "$out"
cmake --build "$build_dir" --target nkigraph >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

moe=(--set num_tokens=1024 --set hidden=1024 --set num_experts=8
  --set intermediate=512 --set block_size=128 --set num_blocks=20)
big_moe=(--set num_tokens=4096 --set hidden=4096 --set num_experts=8
  --set intermediate=1024 --set block_size=512 --set num_blocks=24)
llama8b_tp8=(--set hidden=4096 --set q_heads=4 --set kv_heads=1
  --set head_dim=128 --set intermediate=1792 --set batch=4 --set seq_tkg=1
  --set cache_len=2048 --set tp_degree=8)

graphs="${GRAPHS:-fgcc_tp8 fgcc_tp64 bwmm bwd bwd_big decode8b}"
wanted() { [[ " $graphs " == *" $1 "* ]]; }

trace() {
  local name=$1 kernel=$2
  shift 2
  wanted "$name" || return 0
  "$cli" trace "$kernel" "$@" -o "$out/$name.pb" >/dev/null
}

# PNG width x height from its IHDR chunk.
png_size() {
  od -An -tu1 -j16 -N8 "$1" | awk '{
    printf "%d x %d", (($1*256+$2)*256+$3)*256+$4, (($5*256+$6)*256+$7)*256+$8 }'
}

failed=0
draw() {
  local name=$1 graph=$2
  shift 2
  for ext in svg png; do
    local file="$out/$name.$ext" start end
    start=$(date +%s.%N)
    if ! "$cli" dot "$out/$graph.pb" "$@" -o "$file" 2>"$out/$name.$ext.err"; then
      echo "$name.$ext: FAILED: $(cat "$out/$name.$ext.err")"
      failed=1
      continue
    fi
    end=$(date +%s.%N)
    local note=""
    if grep -q "fallback layout" "$file" 2>/dev/null ||
      { [ "$ext" = png ] && grep -q "fallback layout" "$out/$name.svg" 2>/dev/null; }; then
      note=", fallback layout"
    fi
    local size=""
    [ "$ext" = png ] && size=", $(png_size "$file") px"
    printf '%s.%s: %.1f s%s%s\n' "$name" "$ext" "$(echo "$end - $start" | bc)" \
      "$size" "$note"
  done
}

trace fgcc_tp8 fgcc --set tp_degree=8 --set m=256 --set k=2048 --set n=128
trace fgcc_tp64 fgcc --set tp_degree=64 --set m=128 --set k=1024 --set n=1024
trace bwmm bwmm_shard_on_H "${moe[@]}"
trace bwd blockwise_mm_bwd "${moe[@]}"
trace bwd_big blockwise_mm_bwd "${big_moe[@]}"
trace decode8b transformer_tkg "${llama8b_tp8[@]}" --set num_layers=32

for g in $graphs; do
  draw "$g" "$g"
  draw "$g.barrier" "$g" --view barrier
done
wanted fgcc_tp8 && draw fgcc_tp8.ring_step fgcc_tp8 --scope ring_step --instance 1 --core 0
wanted bwmm && draw bwmm.block2 bwmm --scope block --instance 2
wanted bwd && draw bwd.block2 bwd --scope block --instance 2
wanted decode8b && draw decode8b.layer0 decode8b --scope layer0 --core 0 --max-nodes 60

# Every page (--page K) of the one-step and one-block pictures: each must
# be at most 4,000 pixels wide.
pages() {
  local name=$1 graph=$2
  shift 2
  wanted "$graph" || return 0
  local n
  # The page count from the title (DOT wraps long lines with a backslash).
  n=$("$cli" dot "$out/$graph.pb" "$@" | tr -d '\\\n' |
    grep -o 'with --page K (1 to [0-9]*' | grep -o '[0-9]*$' || echo 1)
  for ((k = 1; k <= n; k++)); do
    draw "$name.page$k" "$graph" "$@" --page "$k"
    local width
    width=$(png_size "$out/$name.page$k.png" | cut -d' ' -f1)
    if ((width > 4000)); then
      echo "$name.page$k.png: $width px wide, over 4,000"
      failed=1
    fi
  done
}
pages fgcc_tp8.ring_step fgcc_tp8 --scope ring_step --instance 1 --core 0
pages bwmm.block2 bwmm --scope block --instance 2
pages bwd.block2 bwd --scope block --instance 2
exit $failed
