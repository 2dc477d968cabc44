#!/usr/bin/env bash
# What the benchmarks need beyond the build: Debian's PyTorch for
# ../shared/bench/vs_pytorch.py and scripts/llama_reference.py (numpy comes
# with scripts/setup.sh), then
# the benchmarks themselves (`ninja -C build benchmarks`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
  if [[ $(id -u) -eq 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
  else
    echo "setup_bench: install python3-torch: sudo apt-get install -y python3-torch" >&2
    exit 1
  fi
fi
cmake --build build -j "$(nproc)" --target benchmarks
