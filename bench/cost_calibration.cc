// The cost model beside published hardware figures: docs/cost_calibration.md
// (scripts/cost_calibration.sh writes it from this program's output). Each
// row is a figure a public source measured on Trainium, nkigraph's
// estimate for the same kernel and shape, and their ratio; the median
// |log ratio| over the rows is the model's calibration error.
//
//   build/bench/cost_calibration > docs/cost_calibration.md
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/tutorial_matmul.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/schedule.h"
#include "graph/graph_index.h"
#include "kernels/registry.h"

namespace nkigraph {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// What a row compares.
enum class Metric {
  kLatencyMs,     // the kernel's (or decode step's) latency
  kLatencyUs,     // the same in microseconds
  kTensorActive,  // % of the latency the tensor engine is busy
  kDmaActive,     // % of the latency at least one DMA engine is busy
};

struct Estimate {
  double latency_ns = 0;
  double tensor_active = 0;  // fraction
  double dma_active = 0;     // fraction
  int64_t instructions = 0;
  int64_t data_dependent_offsets = 0;
};

// The fraction of the latency during which some DMA engine of core 0 is
// busy: the union of their intervals.
double DmaActive(const cost::Schedule& s) {
  std::vector<std::pair<double, double>> spans;
  for (int i : s.index->stream(0)) {
    const cost::Slot& slot = s.slots[i];
    if (slot.lane >= cost::kFirstDmaLane) {
      spans.push_back({slot.start_ns, slot.end_ns});
    }
  }
  std::sort(spans.begin(), spans.end());
  double covered = 0, end = 0;
  for (const auto& [a, b] : spans) {
    if (b <= end) continue;
    covered += b - std::max(a, end);
    end = b;
  }
  return s.makespan_ns > 0 ? covered / s.makespan_ns : 0;
}

absl::StatusOr<Estimate> EstimateOf(const proto::Graph& graph) {
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(graph);
  if (!index.ok()) return index.status();
  absl::StatusOr<cost::Schedule> schedule =
      cost::ScheduleGraph(**index, cost::CostTableFor(graph.world().target()));
  if (!schedule.ok()) return schedule.status();
  const cost::Report report = cost::BuildReport(*schedule, 1);
  Estimate e;
  e.latency_ns = report.latency_ns;
  e.instructions = (*index)->size();
  e.data_dependent_offsets = report.data_dependent_offsets;
  for (const cost::EngineUse& use : report.engines) {
    if (use.core == 0 && use.engine == "tensor") {
      e.tensor_active = use.utilisation;
    }
  }
  e.dma_active = DmaActive(*schedule);
  return e;
}

struct Row {
  std::string what;    // kernel and shape
  std::string target;  // the hardware the figure was measured on
  Metric metric;
  double published;    // ms, or % for the activity rows
  std::string source;  // where the figure is published
};

std::string MetricName(Metric m) {
  switch (m) {
    case Metric::kLatencyMs:
      return "latency (ms)";
    case Metric::kLatencyUs:
      return "latency (us)";
    case Metric::kTensorActive:
      return "TensorE active (%)";
    case Metric::kDmaActive:
      return "DMA active (%)";
  }
  return "";
}

double Value(const Estimate& e, Metric m) {
  switch (m) {
    case Metric::kLatencyMs:
      return e.latency_ns / 1e6;
    case Metric::kLatencyUs:
      return e.latency_ns / 1e3;
    case Metric::kTensorActive:
      return 100 * e.tensor_active;
    case Metric::kDmaActive:
      return 100 * e.dma_active;
  }
  return 0;
}

constexpr char kMatmulTutorial[] =
    "NKI matrix multiplication tutorial, \"Testing Correctness and "
    "Benchmarking\" table (aws-neuron-sdk "
    "general/nki/tutorials/matrix_multiplication.rst; "
    "https://awsdocs-neuron.readthedocs-hosted.com/en/v2.21.0.beta/general/"
    "nki/tutorials/matrix_multiplication.html)";
constexpr char kOptimizationGuide[] =
    "Introduction to NKI Kernel Optimization, profiler summaries "
    "(aws-neuron-sdk nki/guides/tutorials/kernel-optimization.rst; "
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/guides/"
    "tutorials/kernel-optimization.html)";
constexpr char kDmaGuide[] =
    "Introduction to DMA with NKI, example 1: the profile shows one DMA "
    "engine taking 1416 ns to load 32 KiB (aws-neuron-sdk "
    "nki/get-started/about/nki-dma-overview.rst; "
    "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/about/"
    "nki-dma-overview.html)";
constexpr char kLlama70b[] =
    "Llama-3.3-70B on Trn2 tutorial, scenario 1, TPOT P50 (aws-neuron-sdk "
    "libraries/nxd-inference/tutorials/trn2-llama3.3-70b-tutorial.rst and "
    "llama70b_perf_comparison.csv)";
constexpr char kLlama405b[] =
    "Llama-3.1-405B speculative-decoding tutorial on Trn2, scenario 1 (bf16, "
    "no speculation), TPOT P50 (aws-neuron-sdk libraries/nxd-inference/"
    "tutorials/trn2-llama3.1-405b-speculative-tutorial.rst and "
    "llama405b_perf_comparison.csv)";

struct Case {
  Row row;
  // The graph the row's estimate is made on.
  absl::StatusOr<proto::Graph> (*trace)(const Settings&);
  Settings settings;
};

bench::TutorialMatmulShape MatmulShape(const Settings& settings) {
  bench::TutorialMatmulShape s;
  for (const auto& [key, value] : settings) {
    if (key == "dtype" && value == "float32") s.dtype = proto::FLOAT32;
    if (key == "target" && value == "trn2") s.target = proto::TARGET_TRN2;
  }
  return s;
}

bench::TutorialMatmul MatmulVariant(const Settings& settings) {
  for (const auto& [key, value] : settings) {
    if (key != "variant") continue;
    if (value == "hoisted") return bench::TutorialMatmul::kHoisted;
    if (value == "block_free") return bench::TutorialMatmul::kBlockFree;
    if (value == "block_all") return bench::TutorialMatmul::kBlockAll;
  }
  return bench::TutorialMatmul::kTiled;
}

absl::StatusOr<proto::Graph> TraceMatmul(const Settings& settings) {
  return bench::TraceTutorialMatmul(MatmulVariant(settings),
                                    MatmulShape(settings));
}

// The DMA guide's example 1: A[4, 4096] bf16 from HBM into 4 SBUF
// partitions, one dma_copy.
absl::StatusOr<proto::Graph> TraceDmaExample(const Settings& /*settings*/) {
  builder::WorldConfig world;
  world.target = proto::TARGET_TRN2;
  builder::Tracer tracer(builder::TraceConfig{"dma_example", {}, world});
  return tracer.Trace([](builder::Tracer& t) {
    builder::Tensor a = t.Input("A", {4, 4096}, proto::BFLOAT16);
    builder::Tensor tile = t.Allocate({4, 4096}, proto::BFLOAT16,
                                      builder::Buffer::kSbuf, "sbuf_tensor");
    builder::isa::dma_copy(tile, a);
  });
}

absl::StatusOr<proto::Graph> TraceDecode(const Settings& settings) {
  return kernels::KernelRegistry::Global().Trace("transformer_tkg", settings);
}

Settings DecodeSettings(const char* hidden, const char* q_heads,
                        const char* intermediate, const char* layers) {
  // One rank of tp 64 at batch 1; the KV heads (8) replicate to one per
  // rank. The cache length is the published token-generation bucket,
  // 12,800 positions (the run's context grows from 10,000 to about
  // 11,500-11,800 tokens within it).
  return {{"batch", "1"},
          {"seq_tkg", "1"},
          {"head_dim", "128"},
          {"kv_heads", "1"},
          {"cache_len", "12800"},
          {"hidden", hidden},
          {"q_heads", q_heads},
          {"intermediate", intermediate},
          {"tp_degree", "64"},
          {"num_layers", layers},
          {"sbuf_residual_and_cc", "1"}};
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto matmul = [&](const char* variant, const char* label, double ms) {
    cases.push_back(
        {{absl::StrFormat("matmul tutorial, %s, [4096,8192] @ [8192,8192] "
                          "bf16",
                          label),
          "trn1", Metric::kLatencyMs, ms, kMatmulTutorial},
         TraceMatmul,
         {{"variant", variant}}});
  };
  matmul("tiled", "original tiled", 51.80);
  matmul("hoisted", "optimization 1 (hoisted loads)", 42.96);
  matmul("block_free", "optimization 2 (free dims blocked 2 x 2)", 22.07);
  matmul("block_all", "optimization 3 (blocked 16 x 2 x 8)", 6.97);
  auto guide = [&](const char* variant, const char* label, Metric metric,
                   double percent) {
    cases.push_back(
        {{absl::StrFormat("kernel-optimization guide, %s, [4096,8192] @ "
                          "[8192,8192] fp32",
                          label),
          "trn2", metric, percent, kOptimizationGuide},
         TraceMatmul,
         {{"variant", variant}, {"dtype", "float32"}, {"target", "trn2"}}});
  };
  guide("tiled", "tiled", Metric::kDmaActive, 99.93);
  guide("tiled", "tiled", Metric::kTensorActive, 87.28);
  guide("hoisted", "hoisted loads", Metric::kDmaActive, 99.73);
  guide("hoisted", "hoisted loads", Metric::kTensorActive, 99.85);
  cases.push_back({{"DMA guide example 1, A[4,4096] bf16 HBM to SBUF, one "
                    "dma_copy",
                    "trn2", Metric::kLatencyUs, 1.416, kDmaGuide},
                   TraceDmaExample,
                   {}});
  cases.push_back({{"Llama-3.3-70B decode step, tp 64, batch 1 "
                    "(transformer_tkg: hidden 8192, 80 layers, 1 q head, "
                    "intermediate 448 per rank)",
                    "trn2", Metric::kLatencyMs, 19.8, kLlama70b},
                   TraceDecode,
                   DecodeSettings("8192", "1", "448", "80")});
  cases.push_back({{"Llama-3.1-405B decode step, tp 64, batch 1 "
                    "(transformer_tkg: hidden 16384, 126 layers, 2 q heads, "
                    "intermediate 832 per rank)",
                    "trn2", Metric::kLatencyMs, 37.9, kLlama405b},
                   TraceDecode,
                   DecodeSettings("16384", "2", "832", "126")});
  return cases;
}

}  // namespace
}  // namespace nkigraph

int main() {
  using namespace nkigraph;  // NOLINT
  const std::vector<Case> cases = Cases();
  std::printf(
      "| # | kernel and shape | hardware | figure | published | estimate | "
      "estimate / published | instructions | source |\n");
  std::printf("|---:|---|---|---|---:|---:|---:|---:|---|\n");
  std::vector<double> log_ratios;
  std::vector<double> latency_log_ratios;  // the latency rows alone
  std::vector<std::string> misses;
  int number = 0;
  for (const Case& c : cases) {
    ++number;
    absl::StatusOr<proto::Graph> traced = c.trace(c.settings);
    absl::StatusOr<Estimate> estimate =
        traced.ok() ? EstimateOf(*traced)
                    : absl::StatusOr<Estimate>(traced.status());
    if (!estimate.ok()) {
      std::printf("| %d | %s | %s | %s | %.2f | error: %s | | | %s |\n", number,
                  c.row.what.c_str(), c.row.target.c_str(),
                  MetricName(c.row.metric).c_str(), c.row.published,
                  std::string(estimate.status().message()).c_str(),
                  c.row.source.c_str());
      continue;
    }
    const double value = Value(*estimate, c.row.metric);
    const double ratio = value / c.row.published;
    log_ratios.push_back(std::fabs(std::log(ratio)));
    if (c.row.metric == Metric::kLatencyMs ||
        c.row.metric == Metric::kLatencyUs) {
      latency_log_ratios.push_back(std::fabs(std::log(ratio)));
    }
    if (std::fabs(std::log(ratio)) > std::log(2.0)) {
      misses.push_back(absl::StrFormat("%d (%.2fx)", number, ratio));
    }
    std::printf("| %d | %s | %s | %s | %.4g | %.4g | %.2f | %lld | %s |\n",
                number, c.row.what.c_str(), c.row.target.c_str(),
                MetricName(c.row.metric).c_str(), c.row.published, value, ratio,
                static_cast<long long>(estimate->instructions),
                c.row.source.c_str());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0.0;
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  const double all = median(log_ratios);
  const double latency = median(latency_log_ratios);
  std::printf(
      "\nrows: %zu; median |log(estimate / published)|: %.3f (a factor of "
      "%.2f; the target is log 2 = 0.693, a factor of 2). The %zu latency "
      "rows alone: %.3f (a factor of %.2f).\n\n",
      log_ratios.size(), all, std::exp(all), latency_log_ratios.size(), latency,
      std::exp(latency));
  std::printf("rows off by more than 2x: %s\n",
              misses.empty() ? "none" : absl::StrJoin(misses, ", ").c_str());
  return 0;
}
