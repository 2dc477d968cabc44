#!/usr/bin/env bash
# One Llama-3-8B decode step on this machine: transformer_tkg at tp 8
# (hidden 4096, 4 q heads and 1 kv head per rank, head_dim 128,
# intermediate 1792 per rank), batch 1, one token, cache 2048, LAYERS
# layers (default 32), traced and run by the interpreter. Prints the load,
# the trace and run wall times and peak RSS, the run's phases, the
# per-layer time and the weight bytes per second.
#
#   scripts/llama_step.sh            # 32 layers, bfloat16, Llama-shaped
#                                    # weights from .npy files (written once,
#                                    # by scripts/llama_reference.py, into
#                                    # OUT; mapped into device memory)
#   LAYERS=2 scripts/llama_step.sh   # 2 layers
#   PROCS=2 scripts/llama_step.sh    # mpirun -np 2: peak RSS per process
#   INPUTS=random scripts/llama_step.sh   # --random-inputs 1 instead
#   COMPARE=1 scripts/llama_step.sh  # then check the outputs and updated
#                                    # caches against PyTorch
#   DTYPE=float32 LAYERS=2 COMPARE=1 scripts/llama_step.sh
#
# Needs about 1.15 x the graph's device bytes + 1 GB (`nkigraph info`
# prints both): ~17 GB at 32 layers; under PROCS=2 half of that per
# process. The .npy inputs take the weights' size on disk (14 GB at 32
# layers, in OUT).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
layers="${LAYERS:-32}"
procs="${PROCS:-1}"
dtype="${DTYPE:-bfloat16}"
compare="${COMPARE:-0}"
inputs="${INPUTS:-npy}"
if [[ "$compare" == 1 ]]; then inputs=npy; fi
out="${OUT:-out/llama_step}"
# Debian's python3, with numpy and (scripts/setup_bench.sh) torch.
python="${PYTHON:-/usr/bin/python3}"
cli="$build_dir/tools/nkigraph"
mkdir -p "$out"
[[ -n "${NO_BUILD:-}" ]] || cmake --build "$build_dir" --target nkigraph >/dev/null

graph="$out/llama3_8b_tp8_L${layers}_${dtype}.pb"
echo "load: $(uptime)"
/usr/bin/time -f "%e %M" -o "$out/trace.time" "$cli" trace transformer_tkg \
  --set hidden=4096 --set q_heads=4 --set kv_heads=1 --set head_dim=128 \
  --set intermediate=1792 --set batch=1 --set seq_tkg=1 --set cache_len=2048 \
  --set tp_degree=8 --set rmsnorm_eps=1e-5 --set dtype="$dtype" \
  --set num_layers="$layers" -o "$graph" >/dev/null
read -r secs kib <"$out/trace.time"
echo "trace: ${secs} s, peak RSS $((kib / 1024)) MiB"
"$cli" info "$graph" | grep -E "^(instructions|device memory|expected peak)"
# The memory rule's bound, as `info` computes it (DeviceMemory::ExpectedPeakBytes).
limit=$("$cli" info "$graph" | awk '/^expected peak:/ {print $3}')

args=(--raw-bits --timings -o "$out/outputs_L${layers}_${dtype}"
  --memory-limit "$limit" --quiet)
if [[ "$inputs" == npy ]]; then
  dir="$out/inputs_L${layers}_${dtype}"
  if [[ ! -f "$dir/cache_position.npy" ]]; then
    echo "writing the inputs to $dir"
    "$python" scripts/llama_reference.py inputs "$dir" --layers "$layers" \
      --dtype "$dtype"
  fi
  for f in "$dir"/*.npy; do
    name=$(basename "$f" .npy)
    args+=(--input "$name=$f")
  done
else
  args+=(--random-inputs 1)
fi
# Every process under /usr/bin/time, writing its own wall time and peak.
cat >"$out/timed.sh" <<'WRAP'
#!/usr/bin/env bash
exec /usr/bin/time -f "%e %M" -o "$TIMED_DIR/run.time.${OMPI_COMM_WORLD_RANK:-0}" "$@"
WRAP
chmod +x "$out/timed.sh"
export TIMED_DIR="$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ "$procs" -gt 1 ]]; then
  runner=(mpirun -np "$procs" --oversubscribe -x TIMED_DIR "$out/timed.sh")
else
  runner=("$out/timed.sh")
fi
rm -f "$out"/run.time.*
"${runner[@]}" "$cli" run "$graph" "${args[@]}" 2>"$out/run.err" \
  >"$out/run.log" || { cat "$out/run.err" "$out/run.log"; exit 1; }
grep -h "^timings" "$out/run.err" | head -1
for f in "$out"/run.time.*; do
  read -r secs kib <"$f"
  echo "run (process ${f##*.} of $procs): ${secs} s wall, peak RSS" \
    "$((kib / 1024)) MiB"
done
# Weight bytes: W_qkv, W_o, W_gate_up, W_down of every rank and layer.
esize=$([[ "$dtype" == float32 ]] && echo 4 || echo 2)
weights=$((layers * 8 * (4096 * 768 + 512 * 4096 + 4096 * 3584 + 1792 * 4096)
  * esize))
run_s=$(grep -h "^timings" "$out/run.err" | head -1 |
  sed -E 's/.*run ([0-9.]+) s.*/\1/')
awk -v w="$weights" -v s="$run_s" -v l="$layers" 'BEGIN {
  printf "weights %.2f GB; executing the step %.2f s: %.3f s per layer, %.2f GB/s of weights\n",
    w / 1e9, s, s / l, w / 1e9 / s }'
if [[ "$compare" == 1 ]]; then
  "$python" scripts/llama_reference.py compare "$dir" \
    "$out/outputs_L${layers}_${dtype}" --layers "$layers" --dtype "$dtype"
fi
echo "load: $(uptime)"
