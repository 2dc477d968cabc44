#!/usr/bin/env bash
# fgcc at tp 64 (m 128, k n 1024), `nkigraph run --random-inputs 1` in
# P = 1, 2 and 4 processes under mpirun: wall time of the whole run and
# each process's peak RSS (/usr/bin/time -v around every process), and
# that every P writes the single process's output byte for byte.
# Heavy (minutes, gigabytes): run it on a quiet machine.
#   scripts/mpi_figures.sh [BUILD_DIR] [PROCESS_COUNTS...]
# MPI_FIGURES_SETS replaces the trace settings (a smaller shape to try it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
counts=("$@")
((${#counts[@]})) || counts=(1 2 4)
nkigraph="$PWD/$build/tools/nkigraph"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
read -r -a sets <<<"${MPI_FIGURES_SETS:---set tp_degree=64 --set m=128 --set k=1024 --set n=1024}"
echo "fgcc ${sets[*]}"
"$nkigraph" trace fgcc "${sets[@]}" -o "$work/fgcc64.pb"

# Every process under /usr/bin/time -v, writing its own report.
cat >"$work/timed.sh" <<'WRAP'
#!/usr/bin/env bash
rank=${OMPI_COMM_WORLD_RANK:-0}
exec /usr/bin/time -v -o "$TIMED_DIR/time.$rank" "$@"
WRAP
chmod +x "$work/timed.sh"

for p in "${counts[@]}"; do
  dir="$work/p$p"
  mkdir -p "$dir"
  start=$(date +%s.%N)
  TIMED_DIR="$dir" mpirun -np "$p" --oversubscribe -x TIMED_DIR \
    "$work/timed.sh" "$nkigraph" run "$work/fgcc64.pb" --random-inputs 1 \
    -o "$dir/out" --quiet --memory-limit 16000000000 >/dev/null
  end=$(date +%s.%N)
  rss=()
  for ((q = 0; q < p; q++)); do
    kb=$(awk -F': ' '/Maximum resident/ {print $2}' "$dir/time.$q")
    rss+=("$((kb / 1024)) MiB")
  done
  printf 'P=%d: %.1f s wall; peak RSS per process: %s\n' "$p" \
    "$(echo "$end - $start" | bc)" "$(IFS=,; echo "${rss[*]}")"
  if [[ $p != "${counts[0]}" ]]; then
    cmp "$work/p${counts[0]}/out/out.npy" "$dir/out/out.npy" &&
      echo "  out.npy identical to P=${counts[0]}"
  fi
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
