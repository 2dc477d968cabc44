#!/usr/bin/env bash
# The size and speed of `nkigraph view`'s page at production sizes: the
# two-layer Llama-3-8B-shaped transformer_tkg graph at tp 8 and fgcc at
# tp 64. For each: seconds to write the page, its size against the SVGs
# it embeds and against `nkigraph dot`'s whole SVGs (dataflow + barrier;
# laid out whole, which the page never does for a picture this wide),
# then bench/view_bench.mjs in headless Chromium: first contentful paint,
# ready (data parsed, first page and timeline drawn, one frame painted),
# and selecting an instruction to the next painted frame (medians; max).
# Prints the load first: quote it with the numbers (docs/view.md).
#
#   scripts/view_figures.sh            # files under out/view_figures
#   LOADS=9 SELECTS=50 scripts/view_figures.sh
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
out="${OUT:-out/view_figures}"
cli="$build_dir/tools/nkigraph"
mkdir -p "$out"
cmake --build "$build_dir" --target nkigraph >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"

llama8b_tp8=(--set hidden=4096 --set q_heads=4 --set kv_heads=1
  --set head_dim=128 --set intermediate=1792 --set batch=4 --set seq_tkg=1
  --set cache_len=2048 --set tp_degree=8 --set num_layers=2)
"$cli" trace transformer_tkg "${llama8b_tp8[@]}" -o "$out/tkg8_L2.pb"
"$cli" trace fgcc --set tp_degree=64 --set m=128 --set k=1024 --set n=1024 \
  -o "$out/fgcc_tp64.pb"

seconds() { # command...: wall seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  printf '%.1f' "$(echo "$end - $start" | bc)"
}

pages=()
for g in tkg8_L2 fgcc_tp64; do
  view_s=$(seconds "$cli" view "$out/$g.pb" -o "$out/$g.html")
  dot_s=$(seconds "$cli" dot "$out/$g.pb" -o "$out/$g.svg")
  "$cli" dot "$out/$g.pb" --view barrier -o "$out/$g.barrier.svg"
  html=$(stat -c %s "$out/$g.html")
  dot=$(( $(stat -c %s "$out/$g.svg") + $(stat -c %s "$out/$g.barrier.svg") ))
  embedded=$(python3 - "$out/$g.html" <<'PY'
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r'id="nkiview-data">(.*?)</script>', html, re.S).group(1))
print(sum(len(p or "") for v in ("dataflow", "barrier") for p in data[v]["pages"]),
      len(data["dataflow"]["pages"]), len(data["barrier"]["pages"]), len(data["instrs"]))
PY
)
  read -r svg df_pages bl_pages instrs <<<"$embedded"
  printf '%s: %s instructions; view %s s, dot (whole dataflow) %s s; page %.1f MB = %.2f x its %s + %s embedded SVG pages (%.1f MB), %.2f x dot'"'"'s SVGs (%.1f MB)\n' \
    "$g" "$instrs" "$view_s" "$dot_s" "$(echo "$html / 1000000" | bc -l)" \
    "$(echo "$html / $svg" | bc -l)" "$df_pages" "$bl_pages" \
    "$(echo "$svg / 1000000" | bc -l)" "$(echo "$html / $dot" | bc -l)" \
    "$(echo "$dot / 1000000" | bc -l)"
  pages+=("$out/$g.html")
done
node bench/view_bench.mjs "${pages[@]}" --loads "${LOADS:-5}" \
  --selects "${SELECTS:-30}"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
