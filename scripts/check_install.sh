#!/usr/bin/env bash
# Installs the build in BUILD_DIR into a temporary prefix and uses it as a
# user would, with nothing of this source tree in sight:
#   1. cmake --install into BUILD_DIR/install-test/prefix;
#   2. the installed CMake files and headers must not name the source or
#      build tree;
#   3. every installed header compiles from the prefix (one translation
#      unit including them all, against the package's imported targets);
#   4. examples/my_kernels is configured and built against the prefix
#      alone, and its tests run (ctest: its GoogleTest cases and its own
#      command's `verify row_softmax`);
#   5. the Python module imports from the prefix and runs a kernel.
# Usage: scripts/check_install.sh BUILD_DIR   (ctest runs it)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: check_install.sh BUILD_DIR}" && pwd)
work=$build/install-test
prefix=$work/prefix
rm -rf "$prefix" "$work/headers"
mkdir -p "$work"

echo "== install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

echo "== the package names no path of the source or build tree"
if grep -rlF -e "$src/" -e "$build/" "$prefix/lib/cmake" "$prefix/include"; then
  echo "check_install: the files above name $src or $build" >&2
  exit 1
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
configure() {  # SOURCE BUILD
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
}

echo "== every installed header compiles from the prefix"
mkdir -p "$work/headers"
cat > "$work/headers/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(nkigraph_header_check CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(nkigraph 0.1 REQUIRED)
file(GLOB_RECURSE headers RELATIVE "${nkigraph_INCLUDE_DIR}"
  "${nkigraph_INCLUDE_DIR}/*.h")
set(tu "")
foreach(h ${headers})
  string(APPEND tu "#include \"${h}\"\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/all_headers.cc "${tu}")
add_library(all_headers OBJECT ${CMAKE_BINARY_DIR}/all_headers.cc)
target_link_libraries(all_headers PRIVATE nkigraph::cli)
CMAKE
configure "$work/headers" "$work/headers/build"
cmake --build "$work/headers/build" -j 2 >/dev/null
echo "   $(grep -c '#include' "$work/headers/build/all_headers.cc") headers"

echo "== examples/my_kernels against the prefix"
configure "$src/examples/my_kernels" "$work/example"
cmake --build "$work/example" -j 2 >/dev/null
(cd "$work/example" && ctest --output-on-failure -j 2)

echo "== the Python module from the prefix"
if [[ -d $prefix/lib/python3/dist-packages/nkigraph ]]; then
  PYTHONPATH=$prefix/lib/python3/dist-packages /usr/bin/python3 -c '
import nkigraph, numpy as np
g = nkigraph.trace("tiled_matmul", m=8, k=16, n=4, bias=0, dtype="float32")
a = np.arange(128, dtype=np.float32).reshape(8, 16) / 64
b = np.ones((16, 4), np.float32)
out = nkigraph.run(g, {"lhs": a, "rhs": b})["out"]
assert np.allclose(out, a @ b, rtol=1e-5), out
print("   imported", nkigraph.__file__)'
fi
echo "check_install: OK"
