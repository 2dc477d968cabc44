// libFuzzer's entry points for one target, named at compile time by
// NKIGRAPH_FUZZ_TARGET (fuzz/CMakeLists.txt builds fuzz_<target> from it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/harness.h"

#ifndef NKIGRAPH_FUZZ_TARGET
#error "NKIGRAPH_FUZZ_TARGET must name a target of fuzz/targets.cc"
#endif

namespace {
const nkigraph::fuzz::Target* target = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  nkigraph::fuzz::InitializeHarness();
  target = nkigraph::fuzz::FindTarget(NKIGRAPH_FUZZ_TARGET);
  if (target == nullptr) {
    std::fprintf(stderr, "no fuzz target '%s'\n", NKIGRAPH_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  target->run(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
