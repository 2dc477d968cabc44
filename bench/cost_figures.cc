// The cost model's figures for docs/cost_model.md, as markdown tables: every
// registered kernel at its default (or example) configuration — estimated
// latency, utilisation of the busiest engines, roofline bound and ratio —
// and fgcc at tp 8 and tp 64 with 1 or 2 buffers over the SBUF or the
// shared-HBM ring; and the decode step (transformer_tkg) at the
// Llama-3-70B tp 64 and Llama-3-8B tp 8 shapes on both residual paths.
// Estimates from the cost table, not measurements.
//
//   build/bench/cost_figures [--target trn1|trn2|trn3]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cost/cost_table.h"
#include "cost/report.h"
#include "cost/schedule.h"
#include "graph/graph_index.h"
#include "kernels/registry.h"
#include "ops/device_profile.h"

namespace nkigraph {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

struct Row {
  int64_t instructions = 0;
  cost::Report report;
};

absl::StatusOr<Row> Profile(const std::string& kernel, const Settings& settings,
                            proto::Target target) {
  absl::StatusOr<proto::Graph> traced =
      kernels::KernelRegistry::Global().Trace(kernel, settings);
  if (!traced.ok()) return traced.status();
  absl::StatusOr<std::unique_ptr<graph::GraphIndex>> index =
      graph::GraphIndex::Build(*traced);
  if (!index.ok()) return index.status();
  absl::StatusOr<cost::Schedule> schedule =
      cost::ScheduleGraph(**index, cost::CostTableFor(target));
  if (!schedule.ok()) return schedule.status();
  Row row;
  row.instructions = (*index)->size();
  row.report = cost::BuildReport(*schedule, 1);
  return row;
}

// Utilisation per engine, the busiest core's, as "tensor 41%, dma 12%".
std::string Utilisation(const cost::Report& r) {
  std::vector<std::pair<std::string, double>> best;
  for (const cost::EngineUse& e : r.engines) {
    bool found = false;
    for (auto& [name, u] : best) {
      if (name == e.engine) {
        u = std::max(u, e.utilisation);
        found = true;
      }
    }
    if (!found) best.push_back({e.engine, e.utilisation});
  }
  std::vector<std::string> parts;
  for (const auto& [name, u] : best) {
    parts.push_back(absl::StrFormat("%s %.0f%%", name, 100 * u));
  }
  return absl::StrJoin(parts, ", ");
}

std::string Us(double ns) { return absl::StrFormat("%.2f", ns / 1000.0); }

}  // namespace
}  // namespace nkigraph

int main(int argc, char** argv) {
  using namespace nkigraph;  // NOLINT
  proto::Target target = proto::TARGET_TRN2;
  if (argc == 3 && std::string(argv[1]) == "--target") {
    absl::StatusOr<proto::Target> named = ops::ParseTarget(argv[2]);
    if (!named.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(named.status().message()).c_str());
      return 2;
    }
    target = *named;
  }
  std::printf(
      "| kernel | instructions | latency (us) | utilisation | roofline (us) | "
      "bound | ratio |\n");
  std::printf("|---|---:|---:|---|---:|---|---:|\n");
  for (const kernels::KernelDef& def :
       kernels::KernelRegistry::Global().kernels()) {
    absl::StatusOr<Row> row = Profile(def.name, def.example, target);
    if (!row.ok()) {
      std::printf("| %s | error: %s |\n", def.name.c_str(),
                  std::string(row.status().message()).c_str());
      continue;
    }
    const cost::Report& r = row->report;
    std::printf("| %s | %lld | %s | %s | %s | %s | %.2f |\n", def.name.c_str(),
                static_cast<long long>(row->instructions),
                Us(r.latency_ns).c_str(), Utilisation(r).c_str(),
                Us(r.roofline_ns).c_str(), r.compute_bound ? "compute" : "HBM",
                r.roofline_ratio);
  }
  std::printf(
      "\n| fgcc | buffers | ring | instructions | latency (us) | HBM bytes | "
      "roofline (us) | ratio |\n");
  std::printf("|---|---:|---|---:|---:|---:|---:|---:|\n");
  // A square shape, and a ring-bound one (wide k, narrow n: the permutes
  // outweigh the output stores, whose dynamic slot offsets statically
  // touch all of `out` and so follow one another).
  struct Shape {
    const char* m;
    const char* k;
    const char* n;
  };
  for (const char* tp : {"8", "64"}) {
    for (const Shape& shape :
         {Shape{"512", "1024", "1024"}, Shape{"256", "2048", "128"}}) {
      for (const char* hbm : {"0", "1"}) {
        for (const char* buffers : {"1", "2"}) {
          const Settings settings = {
              {"tp_degree", tp},     {"m", shape.m},
              {"k", shape.k},        {"n", shape.n},
              {"force_hbm_cc", hbm}, {"num_buffers", buffers}};
          absl::StatusOr<Row> row = Profile("fgcc", settings, target);
          if (!row.ok()) {
            std::printf("| tp %s | error: %s |\n", tp,
                        std::string(row.status().message()).c_str());
            continue;
          }
          const cost::Report& r = row->report;
          std::printf(
              "| tp %s, m %s, k %s, n %s | %s | %s | %lld | %s | %lld | %s | "
              "%.2f |\n",
              tp, shape.m, shape.k, shape.n, buffers,
              hbm[0] == '1' ? "HBM" : "SBUF",
              static_cast<long long>(row->instructions),
              Us(r.latency_ns).c_str(), static_cast<long long>(r.traffic.hbm()),
              Us(r.roofline_ns).c_str(), r.roofline_ratio);
        }
      }
    }
  }
  // The decode step of the seed (transformer_tkg, one rank's shard): per
  // token of each sequence in the batch, the step's estimated latency next
  // to its roofline bound, on the HBM and the SBUF residual path.
  std::printf(
      "\n| decode step | residual | instructions | latency per token (us) | "
      "HBM bytes | roofline (us) | bound | ratio |\n");
  std::printf("|---|---|---:|---:|---:|---:|---|---:|\n");
  struct Decode {
    const char* name;
    Settings settings;
  };
  const Settings common = {{"batch", "4"},
                           {"seq_tkg", "1"},
                           {"head_dim", "128"},
                           {"kv_heads", "1"},
                           {"cache_len", "2048"}};
  const Decode decodes[] = {
      {"Llama-3-70B, tp 64, 80 layers",
       {{"hidden", "8192"},
        {"q_heads", "1"},
        {"intermediate", "448"},
        {"tp_degree", "64"},
        {"num_layers", "80"}}},
      {"Llama-3-8B, tp 8, 32 layers",
       {{"hidden", "4096"},
        {"q_heads", "4"},
        {"intermediate", "1792"},
        {"tp_degree", "8"},
        {"num_layers", "32"}}},
  };
  for (const Decode& d : decodes) {
    for (const char* sbuf : {"0", "1"}) {
      Settings settings = common;
      settings.insert(settings.end(), d.settings.begin(), d.settings.end());
      settings.push_back({"sbuf_residual_and_cc", sbuf});
      absl::StatusOr<Row> row = Profile("transformer_tkg", settings, target);
      if (!row.ok()) {
        std::printf("| %s | error: %s |\n", d.name,
                    std::string(row.status().message()).c_str());
        continue;
      }
      const cost::Report& r = row->report;
      std::printf(
          "| %s | %s | %lld | %s | %lld | %s | %s | %.2f |\n", d.name,
          sbuf[0] == '1' ? "SBUF" : "HBM",
          static_cast<long long>(row->instructions), Us(r.latency_ns).c_str(),
          static_cast<long long>(r.traffic.hbm()), Us(r.roofline_ns).c_str(),
          r.compute_bound ? "compute" : "HBM", r.roofline_ratio);
    }
  }
  return 0;
}
