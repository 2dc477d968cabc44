#!/usr/bin/env bash
# The decode-transformer figures (issue 13): trace time and instruction
# count of transformer_tkg at the Llama-3-8B per-rank shape for tp 8 at 32
# layers, the per-layer slope (1 and 2 layers), `info` and the collapsed
# `dot` render time of the 32-layer graph, and the trace and `info` at the
# Llama-3-70B per-rank shape for tp 64 (80 layers). Prints the load first:
# quote it with the numbers.
#
#   scripts/decode_figures.sh            # graphs under out/decode_figures
#   BUILD_DIR=build OUT=/tmp/figs scripts/decode_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
out="${OUT:-out/decode_figures}"
run_layers="${RUN_LAYERS:-4}"
cli="$build_dir/tools/nkigraph"
mkdir -p "$out"
cmake --build "$build_dir" --target nkigraph >/dev/null

llama8b_tp8=(--set hidden=4096 --set q_heads=4 --set kv_heads=1
  --set head_dim=128 --set intermediate=1792 --set batch=4 --set seq_tkg=1
  --set cache_len=2048 --set tp_degree=8)
llama70b_tp64=(--set hidden=8192 --set q_heads=1 --set kv_heads=1
  --set head_dim=128 --set intermediate=448 --set batch=4 --set seq_tkg=1
  --set cache_len=2048 --set tp_degree=64 --set num_layers=80)

# Wall seconds and peak RSS (MiB) of a command, its output kept in $out.
timed() {
  local name=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out/$name.time" "$@" >"$out/$name.log" 2>&1
  read -r secs kib <"$out/$name.time"
  echo "$name: ${secs} s, peak RSS $((kib / 1024)) MiB"
}

# `info` without its per-tensor table.
summary() {
  sed '/^tensors:/q' "$1"
}

instructions() {
  "$cli" info "$1" | awk '/^instructions:/ {print $2}'
}

echo "load: $(uptime)"
for layers in 1 2 32; do
  timed "trace_8b_tp8_L$layers" "$cli" trace transformer_tkg \
    "${llama8b_tp8[@]}" --set num_layers=$layers -o "$out/8b_tp8_L$layers.pb"
done
i1=$(instructions "$out/8b_tp8_L1.pb")
i2=$(instructions "$out/8b_tp8_L2.pb")
i32=$(instructions "$out/8b_tp8_L32.pb")
echo "instructions 8B tp8: L1 $i1, L2 $i2, L32 $i32;" \
  "per layer $((i2 - i1)); L1 + 31 slopes = $((i1 + 31 * (i2 - i1)))"
timed "info_8b_tp8_L32" "$cli" info "$out/8b_tp8_L32.pb"
summary "$out/info_8b_tp8_L32.log"
timed "dot_8b_tp8_L32" "$cli" dot "$out/8b_tp8_L32.pb" -o "$out/8b_tp8_L32.svg"
timed "trace_8b_tp8_L32_sbuf" "$cli" trace transformer_tkg \
  "${llama8b_tp8[@]}" --set num_layers=32 --set sbuf_residual_and_cc=1 \
  -o "$out/8b_tp8_L32_sbuf.pb"
echo "instructions 8B tp8 SBUF path: L32 $(instructions "$out/8b_tp8_L32_sbuf.pb")"
if [[ "$run_layers" -gt 0 ]]; then
  "$cli" trace transformer_tkg "${llama8b_tp8[@]}" --set num_layers="$run_layers" \
    -o "$out/8b_tp8_L$run_layers.pb" >/dev/null
  timed "run_8b_tp8_L$run_layers" "$cli" run "$out/8b_tp8_L$run_layers.pb" \
    --random-inputs 1 -o "$out/run_L$run_layers" --memory-limit 22000000000
fi
timed "trace_70b_tp64_L80" "$cli" trace transformer_tkg \
  "${llama70b_tp64[@]}" -o "$out/70b_tp64_L80.pb"
timed "info_70b_tp64_L80" "$cli" info "$out/70b_tp64_L80.pb"
summary "$out/info_70b_tp64_L80.log"
echo "load: $(uptime)"
