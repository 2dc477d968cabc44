#!/usr/bin/env bash
# Installs the Debian packages nkigraph builds with (when run as root), or
# says exactly what to install, then configures and builds into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build pkg-config g++ ccache
          libprotobuf-dev protobuf-compiler libabsl-dev
          libgtest-dev libgmock-dev libbenchmark-dev
          libgraphviz-dev graphviz libopenblas-dev nlohmann-json3-dev
          pybind11-dev python3-pybind11 python3-numpy python3-dev
          python3-pytest openmpi-bin libopenmpi-dev chromium)
# Node.js and npm drive the browser tests (tests/browser/); a machine that
# has them from elsewhere keeps its own.
if ! command -v npm >/dev/null; then packages+=(nodejs npm); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# puppeteer-core for the browser tests, at the lockfile's versions; it
# drives the chromium above and downloads no browser of its own.
if [[ ! -d tests/browser/node_modules/puppeteer-core ]]; then
  npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error >/dev/null
fi

build_type=${NKIGRAPH_BUILD_TYPE:-Release}
if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
fi
cmake --build build -j "$(nproc)"
