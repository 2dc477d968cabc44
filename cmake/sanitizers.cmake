# Sanitizer and fuzzing builds, each in a build directory of its own:
#
#   cmake -S . -B build-asan -DNKIGRAPH_SANITIZE=address,undefined
#       the whole suite under ASan and UBSan (scripts/run_tests.sh);
#   CXX=clang++-14 cmake -S . -B build-fuzz -DNKIGRAPH_FUZZ=ON \
#       -DNKIGRAPH_SANITIZE=address,undefined
#       the libFuzzer targets fuzz/fuzz_<target> (scripts/fuzz.sh).
#
# The flags go on every target of the project (libraries included, so a
# report names the library line); system libraries are not rebuilt.

set(NKIGRAPH_SANITIZE "" CACHE STRING
    "Sanitizers for every target, as -fsanitize= takes them (address,undefined)")
option(NKIGRAPH_FUZZ "Build the libFuzzer targets (clang only)" OFF)

if(NKIGRAPH_SANITIZE)
  # Every report stops the process: a test that provokes one fails.
  add_compile_options(-fsanitize=${NKIGRAPH_SANITIZE}
                      -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${NKIGRAPH_SANITIZE})
  if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT NKIGRAPH_FUZZ)
    # Cheap to build (CI builds it from nothing), fast enough to run the
    # suite, assertions on. Given here rather than as
    # CMAKE_CXX_FLAGS_RELEASE so that targets which drop these options
    # (the test files: tests/CMakeLists.txt) compile exactly as in the
    # ordinary build.
    add_compile_options(-O1 -g0 -UNDEBUG)
  endif()
endif()

if(NKIGRAPH_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NKIGRAPH_FUZZ needs clang (libFuzzer); "
                        "configure with CXX=clang++-14 CC=clang-14")
  endif()
  # Coverage feedback everywhere; libFuzzer's main only in fuzz_<target>.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
