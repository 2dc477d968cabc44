#include "cost/report_format.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "util/text_table.h"

namespace nkigraph::cost {
namespace {

std::string Us(double ns) { return absl::StrFormat("%.3f", ns / 1000.0); }

}  // namespace

void WriteReportText(const Report& r, int top, std::ostream& out) {
  out << "kernel " << r.kernel << " on " << r.target << ": " << r.instructions
      << " instructions, " << r.num_cores
      << (r.num_cores == 1 ? " core" : " cores") << " per rank";
  if (r.num_ranks > 1) {
    out << ", " << r.num_ranks << " ranks (rank 0 simulated; every rank runs "
        << "the same streams)";
  }
  out << "\n";
  out << "estimated latency: " << Us(r.latency_ns)
      << " us (cost-model estimate, not a measurement)\n";
  if (r.dynamic_operands > 0) {
    out << "dynamic offsets: " << r.dynamic_operands << " operands, "
        << r.dynamic_operands - r.data_dependent_offsets
        << " resolved from values known before the run, "
        << r.data_dependent_offsets
        << " data-dependent (taken to touch their whole tensor)\n";
  }
  if (r.roofline_ns > 0) {
    out << "roofline bound: " << Us(r.roofline_ns) << " us ("
        << (r.compute_bound ? "compute" : "HBM bytes") << ", core "
        << r.roofline_core
        << "); estimate / bound = " << absl::StrFormat("%.2f", r.roofline_ratio)
        << "\n";
  } else {
    out << "roofline bound: 0 (no matmul FLOPs, no DMA to or from HBM)\n";
  }
  out << absl::StrFormat("FLOPs: %.6g\n", r.flops);
  out << "traffic (bytes):\n";
  PrintTable({{"", "read", "write"},
              {"hbm", absl::StrCat(r.traffic.hbm_read),
               absl::StrCat(r.traffic.hbm_write)},
              {"sbuf", absl::StrCat(r.traffic.sbuf_read),
               absl::StrCat(r.traffic.sbuf_write)},
              {"psum", absl::StrCat(r.traffic.psum_read),
               absl::StrCat(r.traffic.psum_write)}},
             "  ", out);
  out << "roofline per core:\n";
  std::vector<std::vector<std::string>> bounds = {
      {"core", "FLOPs", "compute_us", "dma_hbm_bytes", "memory_us"}};
  for (const CoreBound& b : r.bounds) {
    bounds.push_back({absl::StrCat(b.core), absl::StrFormat("%.6g", b.flops),
                      Us(b.compute_ns), absl::StrCat(b.dma_hbm_bytes),
                      Us(b.memory_ns)});
  }
  PrintTable(bounds, "  ", out);
  out << "engines:\n";
  std::vector<std::vector<std::string>> engines = {
      {"core", "engine", "instructions", "busy_us", "utilisation"}};
  for (const EngineUse& e : r.engines) {
    engines.push_back({absl::StrCat(e.core),
                       e.lanes > 1
                           ? absl::StrCat(e.engine, " (", e.lanes, " engines)")
                           : e.engine,
                       absl::StrCat(e.instructions), Us(e.busy_ns),
                       absl::StrFormat("%.1f%%", 100.0 * e.utilisation)});
  }
  PrintTable(engines, "  ", out);
  out << "critical path by scope and source line (" << Us(r.critical_ns)
      << " us of " << Us(r.latency_ns) << " us shown):\n";
  std::vector<std::vector<std::string>> critical = {
      {"us", "share", "instructions", "opcode", "source", "scope"}};
  for (const CriticalLine& c : r.critical) {
    critical.push_back(
        {Us(c.ns),
         absl::StrFormat("%.1f%%",
                         r.latency_ns > 0 ? 100.0 * c.ns / r.latency_ns : 0),
         absl::StrCat(c.instructions), c.opcode,
         absl::StrCat(c.file, ":", c.line), c.scope});
  }
  PrintTable(critical, "  ", out);
  out << "scope instances (first " << (top > 0 ? absl::StrCat(top) : "all")
      << " per scope):\n";
  std::vector<std::vector<std::string>> scopes = {
      {"core", "scope", "instance", "start_us", "end_us", "span_us", "busy_us",
       "instructions"}};
  // Grouped by core and scope path, each path's instances in order.
  std::vector<const ScopeInstance*> sorted;
  for (const ScopeInstance& s : r.scopes) sorted.push_back(&s);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const ScopeInstance* a, const ScopeInstance* b) {
                     return std::tie(a->core, a->path) <
                            std::tie(b->core, b->path);
                   });
  std::map<std::pair<int, int>, int> shown;
  for (const ScopeInstance* instance : sorted) {
    const ScopeInstance& s = *instance;
    int& n = shown[{s.core, s.path}];
    if (top > 0 && n >= top) continue;
    ++n;
    scopes.push_back({absl::StrCat(s.core), r.scope_paths[s.path],
                      absl::StrCat(s.instance), Us(s.start_ns), Us(s.end_ns),
                      Us(s.end_ns - s.start_ns), Us(s.busy_ns),
                      absl::StrCat(s.instructions)});
  }
  PrintTable(scopes, "  ", out);
}

void WriteReportJson(const Report& r, std::ostream& out) {
  using nlohmann::json;
  json doc;
  doc["kernel"] = r.kernel;
  doc["target"] = r.target;
  doc["instructions"] = r.instructions;
  doc["num_cores"] = r.num_cores;
  doc["num_ranks"] = r.num_ranks;
  doc["simulated_ranks"] = 1;
  doc["latency_ns"] = r.latency_ns;
  doc["dynamic_offsets"] = {
      {"operands", r.dynamic_operands},
      {"resolved", r.dynamic_operands - r.data_dependent_offsets},
      {"data_dependent", r.data_dependent_offsets}};
  json engines = json::array();
  for (const EngineUse& e : r.engines) {
    engines.push_back({{"core", e.core},
                       {"engine", e.engine},
                       {"lanes", e.lanes},
                       {"instructions", e.instructions},
                       {"busy_ns", e.busy_ns},
                       {"utilisation", e.utilisation}});
  }
  doc["engines"] = std::move(engines);
  doc["traffic_bytes"] = {
      {"hbm", {{"read", r.traffic.hbm_read}, {"write", r.traffic.hbm_write}}},
      {"sbuf",
       {{"read", r.traffic.sbuf_read}, {"write", r.traffic.sbuf_write}}},
      {"psum",
       {{"read", r.traffic.psum_read}, {"write", r.traffic.psum_write}}}};
  doc["flops"] = r.flops;
  json bounds = json::array();
  for (const CoreBound& b : r.bounds) {
    bounds.push_back({{"core", b.core},
                      {"flops", b.flops},
                      {"compute_ns", b.compute_ns},
                      {"dma_hbm_bytes", b.dma_hbm_bytes},
                      {"memory_ns", b.memory_ns}});
  }
  doc["roofline"] = {{"bound_ns", r.roofline_ns},
                     {"core", r.roofline_core},
                     {"limit", r.compute_bound ? "compute" : "memory"},
                     {"ratio", r.roofline_ratio},
                     {"per_core", std::move(bounds)}};
  json critical = json::array();
  for (const CriticalLine& c : r.critical) {
    critical.push_back({{"scope", c.scope},
                        {"file", c.file},
                        {"line", c.line},
                        {"opcode", c.opcode},
                        {"instructions", c.instructions},
                        {"ns", c.ns}});
  }
  doc["critical_path"] = std::move(critical);
  json scopes = json::array();
  for (const ScopeInstance& s : r.scopes) {
    scopes.push_back({{"core", s.core},
                      {"scope", r.scope_paths[s.path]},
                      {"instance", s.instance},
                      {"start_ns", s.start_ns},
                      {"end_ns", s.end_ns},
                      {"busy_ns", s.busy_ns},
                      {"instructions", s.instructions}});
  }
  doc["scope_instances"] = std::move(scopes);
  out << doc.dump(2) << "\n";
}

}  // namespace nkigraph::cost
