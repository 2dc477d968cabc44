// The memory rule (interp/device_memory.h): a run holds at most 1.15 x its
// graph's device bytes + 1 GiB. Each graph here runs as its own `nkigraph
// run --random-inputs` process, which reports (--timings) the peak its
// memory budget counted and its own peak RSS from the kernel; `info`
// reports the device bytes and the bound.
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "interp/device_memory.h"
#include "kernels/registry.h"
#include "tests/cli_fixture.h"

namespace nkigraph {
namespace {

// Under a sanitizer its shadow memory and quarantine are the process's
// too: peak RSS then says nothing of the rule, and only the budget's count
// is checked.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The integer after `label` in `text`; -1 if there is none.
int64_t NumberAfter(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return -1;
  const size_t begin = at + label.size();
  size_t end = begin;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  int64_t value = -1;
  if (!absl::SimpleAtoi(text.substr(begin, end - begin), &value)) return -1;
  return value;
}

struct Measured {
  int64_t device = -1;    // info's device bytes
  int64_t expected = -1;  // info's expected peak
  int64_t held = -1;      // the budget's peak
  int64_t rss = -1;       // the process's peak RSS
};

class MemoryRuleTest : public testing::CliFixture {
 protected:
  // Traces `kernel` with `settings` (shell words) and runs it.
  Measured TraceAndRun(const std::string& kernel, const std::string& settings) {
    Measured m;
    const std::string graph = Path(kernel + ".pb");
    const testing::CliResult traced = RunCli(
        absl::StrCat("trace ", kernel, " ", settings, " -o '", graph, "'"));
    EXPECT_EQ(traced.exit_code, 0) << kernel << ": " << traced.err;
    const testing::CliResult info = RunCli(absl::StrCat("info '", graph, "'"));
    EXPECT_EQ(info.exit_code, 0) << kernel << ": " << info.err;
    m.device = NumberAfter(info.out, "device memory: ");
    m.expected = NumberAfter(info.out, "expected peak: ");
    const testing::CliResult ran = RunCli(absl::StrCat(
        "run '", graph, "' --random-inputs 1 --timings --quiet -o '",
        Path(kernel + "_out"), "' --memory-limit 4000000000"));
    EXPECT_EQ(ran.exit_code, 0) << kernel << ": " << ran.err;
    m.held = NumberAfter(ran.err, "held at most ");
    m.rss = NumberAfter(ran.err, "peak RSS ");
    return m;
  }
};

TEST_F(MemoryRuleTest, EveryKernelAtItsDefaultsHoldsAtMostTheBound) {
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    SCOPED_TRACE(def.name);
    // At its defaults, with its example for the parameters it requires.
    std::string settings;
    for (const auto& [name, value] : def.example) {
      absl::StrAppend(&settings, " --set ", name, "=", value);
    }
    const Measured m = TraceAndRun(def.name, settings);
    ASSERT_GT(m.device, 0);
    // info's bound is the rule's formula, worked here by hand.
    EXPECT_EQ(m.expected, m.device + m.device * 15 / 100 + (int64_t{1} << 30));
    EXPECT_EQ(m.expected, interp::DeviceMemory::ExpectedPeakBytes(m.device));
    ASSERT_GT(m.held, 0);
    ASSERT_GT(m.rss, 0);
    EXPECT_LE(m.held, m.expected);
    if (!kSanitized) {
      EXPECT_LE(m.rss, m.expected);
    }
    // The budget counts the device memory itself at least.
    EXPECT_GE(m.held, m.device);
  }
}

// A graph whose weights are most of it (122 MB): beyond what a small
// kernel's run holds, the process holds its device bytes and little else.
// A float32 host copy of its bfloat16 weights (2x their bytes), or a
// second copy of any input, breaks this.
TEST_F(MemoryRuleTest, WeightsAreHeldOnceInTheirDtype) {
  const Measured small = TraceAndRun("mlp_tkg", "");
  const Measured big = TraceAndRun(
      "transformer_tkg",
      "--set hidden=2048 --set q_heads=4 --set kv_heads=1 --set head_dim=128 "
      "--set intermediate=2048 --set batch=1 --set seq_tkg=1 "
      "--set cache_len=2048 --set tp_degree=2 --set num_layers=2");
  // 2 layers x 2 ranks x (W_qkv 2048x768 + W_o 512x2048 + W_gate_up
  // 2048x4096 + W_down 2048x2048) bfloat16 values: most of the device
  // (the rest, 30 MB: 2 x 2 caches of 2048x128 values per layer, 4 MB,
  // and each of the 4 cores' SBUF and PSUM).
  const int64_t weights =
      int64_t{2} * 2 * (2048 * 768 + 512 * 2048 + 2048 * 4096 + 2048 * 2048) *
      2;
  ASSERT_GT(big.device, weights);
  EXPECT_LT(big.device, weights + weights / 3);
  const int64_t slack = big.device * 15 / 100 + (int64_t{64} << 20);
  if (!kSanitized) {
    EXPECT_LE(big.rss - small.rss, big.device + slack)
        << "peak RSS " << big.rss << " vs " << small.rss << ", device "
        << big.device;
  }
  EXPECT_LE(big.held, big.device + slack);
}

}  // namespace
}  // namespace nkigraph
