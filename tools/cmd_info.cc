// nkigraph info FILE: a deterministic summary of a graph file.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "interp/device_memory.h"
#include "ops/device_profile.h"
#include "ops/instr_facts.h"
#include "ops/instr_view.h"
#include "ops/op_def.h"
#include "tools/commands.h"
#include "util/dtype.h"
#include "util/graph_source.h"
#include "util/text_table.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] = R"(usage: nkigraph info FILE [--diagnostics json]

Summarizes a graph (.pb or .pbtxt, or a replay bundle's graph): kernel and parameters, world,
instruction counts per opcode, per engine and per operand memory space,
per-core stream lengths, on-chip high-water marks per core (bytes per
partition), and the tensor table.

options:
%s  -h, --help             show this help
)";

constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

// a * b, saturating at kSaturated; negative factors count as 0.
int64_t SaturatingMul(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  if (a > kSaturated / b) return kSaturated;
  return a * b;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return a > kSaturated - b ? kSaturated : a + b;
}

// Bytes of one partition row: dtype size x product of shape[1:].
int64_t RowBytes(const proto::Tensor& tensor) {
  int64_t bytes = DTypeSize(tensor.dtype());
  for (int d = 1; d < tensor.shape_size(); ++d) {
    bytes = SaturatingMul(bytes, tensor.shape(d));
  }
  return bytes;
}

std::string TargetName(proto::Target target) {
  switch (target) {
    case proto::TARGET_UNSPECIFIED:
      return "trn2 (unspecified)";
    case proto::TARGET_TRN1:
    case proto::TARGET_TRN2:
    case proto::TARGET_TRN3:
      return std::string(ops::ProfileFor(target).name);
    default:
      return absl::StrCat("unknown target ", static_cast<int>(target));
  }
}

// The engine name `info` counts an instruction under.
std::string EngineText(const proto::Instruction& instr) {
  const std::optional<ops::Engine> engine = ops::EngineOf(instr);
  return engine ? std::string(ops::EngineName(*engine)) : "unknown";
}

std::string RoleName(const proto::Tensor& tensor) {
  switch (tensor.role()) {
    case proto::ROLE_INTERNAL:
      return "internal";
    case proto::ROLE_INPUT:
      return "input";
    case proto::ROLE_OUTPUT:
      return "output";
    case proto::ROLE_INPUT_OUTPUT:
      return absl::StrCat("input_output (output '", tensor.output_name(), "')");
    default:
      return absl::StrCat("unknown role ", static_cast<int>(tensor.role()));
  }
}

void PrintCounts(absl::string_view title,
                 const std::vector<std::pair<std::string, int64_t>>& counts,
                 std::ostream& out) {
  out << title << ":\n";
  if (counts.empty()) {
    out << "  (none)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, count] : counts) {
    rows.push_back({name, absl::StrCat(count)});
  }
  PrintTable(rows, "  ", out);
}

}  // namespace

void PrintInfo(const proto::Graph& graph, std::ostream& out) {
  out << "kernel: " << graph.kernel_name() << "\n";
  out << "params:";
  if (graph.params().empty()) out << " (none)";
  for (const proto::Param& param : graph.params()) {
    out << " " << param.name() << "=" << param.value();
  }
  out << "\n";
  const proto::World& world = graph.world();
  out << "world: target " << TargetName(world.target()) << ", "
      << world.num_ranks() << " rank(s), " << world.num_cores()
      << " core(s) per rank";
  if (world.replica_groups_size() > 0) {
    std::vector<std::string> groups;
    for (const proto::ReplicaGroup& group : world.replica_groups()) {
      groups.push_back(
          absl::StrCat("[", absl::StrJoin(group.ranks(), " "), "]"));
    }
    out << ", replica groups " << absl::StrJoin(groups, " ");
  }
  out << "\n";

  // Instruction counts.
  std::map<int, int64_t> by_opcode;
  std::map<std::string, int64_t> by_engine;
  std::map<int, int64_t> by_space;
  int64_t invalid_operands = 0;
  int64_t total = 0;
  std::map<uint32_t, int64_t> stream_lengths;
  for (const proto::Stream& stream : graph.streams()) {
    stream_lengths[stream.core()] += stream.instructions_size();
    for (const proto::Instruction& instr : stream.instructions()) {
      ++total;
      ++by_opcode[instr.opcode()];
      ++by_engine[EngineText(instr)];
      for (const proto::AccessPattern& ap : instr.operands()) {
        const uint32_t id = ap.tensor_id();
        if (id == 0) continue;  // absent optional operand
        if (id > static_cast<uint32_t>(graph.tensors_size())) {
          ++invalid_operands;
          continue;
        }
        ++by_space[graph.tensors(static_cast<int>(id) - 1).space()];
      }
    }
  }
  out << "instructions: " << total << "\n";
  std::vector<std::pair<std::string, int64_t>> counts;
  for (const auto& [opcode, count] : by_opcode) {
    counts.emplace_back(ops::OpcodeName(static_cast<proto::Opcode>(opcode)),
                        count);
  }
  PrintCounts("by opcode", counts, out);
  counts.assign(by_engine.begin(), by_engine.end());
  PrintCounts("by engine", counts, out);
  counts.clear();
  for (const auto& [space, count] : by_space) {
    counts.emplace_back(
        std::string(ops::SpaceName(static_cast<proto::MemorySpace>(space))),
        count);
  }
  if (invalid_operands > 0) {
    counts.emplace_back("invalid tensor id", invalid_operands);
  }
  PrintCounts("operands by memory space", counts, out);

  out << "streams:\n";
  if (stream_lengths.empty()) out << "  (none)\n";
  for (const auto& [core, length] : stream_lengths) {
    out << "  core " << core << ": " << length << " instructions\n";
  }

  // On-chip high-water marks: the highest byte any SBUF/PSUM tensor of a
  // core reaches in its partitions.
  struct HighWater {
    int64_t sbuf = 0;
    int64_t psum = 0;
  };
  std::map<uint32_t, HighWater> high_water;
  for (const auto& [core, length] : stream_lengths) high_water[core];
  for (const proto::Tensor& tensor : graph.tensors()) {
    if (tensor.space() != proto::SBUF && tensor.space() != proto::PSUM) {
      continue;
    }
    const int64_t top = SaturatingAdd(tensor.address(), RowBytes(tensor));
    HighWater& mark = high_water[tensor.core()];
    int64_t& slot = tensor.space() == proto::SBUF ? mark.sbuf : mark.psum;
    slot = std::max(slot, top);
  }
  out << "on-chip high-water (bytes per partition):\n";
  if (high_water.empty()) out << "  (none)\n";
  for (const auto& [core, mark] : high_water) {
    out << "  core " << core << ": sbuf " << mark.sbuf << ", psum " << mark.psum
        << "\n";
  }

  // What running it holds: the device memories, and the memory rule's
  // bound on a run's peak (interp/device_memory.h); under mpirun each
  // process holds its ranks' share.
  const int64_t ranks = std::max<int64_t>(1, graph.world().num_ranks());
  const int64_t device = interp::DeviceMemory::DeviceBytes(graph);
  out << "device memory: " << device << " bytes ("
      << absl::StrFormat("%.2f", device / 1e9) << " GB; " << ranks
      << " rank(s) of " << device / ranks << " bytes)\n";
  const int64_t peak = interp::DeviceMemory::ExpectedPeakBytes(device);
  out << "expected peak: " << peak << " bytes ("
      << absl::StrFormat("%.2f", peak / 1e9)
      << " GB: 1.15 x device + 1 GiB; a process of mpirun holding k ranks: "
         "1.15 x k x "
      << device / ranks << " + 1 GiB)\n";

  out << "tensors: " << graph.tensors_size() << "\n";
  if (graph.tensors_size() > 0) {
    std::vector<std::vector<std::string>> rows;
    rows.push_back(
        {"id", "name", "space", "dtype", "shape", "core", "address", "role"});
    for (const proto::Tensor& tensor : graph.tensors()) {
      rows.push_back(
          {absl::StrCat(tensor.id()), tensor.name(),
           std::string(ops::SpaceName(tensor.space())),
           std::string(DTypeName(tensor.dtype())),
           absl::StrCat("[", absl::StrJoin(tensor.shape(), ", "), "]"),
           tensor.space() == proto::SHARED_HBM ? "-"
                                               : absl::StrCat(tensor.core()),
           absl::StrCat(tensor.address()), RoleName(tensor)});
    }
    PrintTable(rows, "  ", out);
  }
}

int RunInfo(const std::vector<std::string>& args) {
  int exit_code = kExitOk;
  std::optional<ParsedArgs> parsed =
      StartVerb(args, "info", {}, kUsage, &exit_code);
  if (!parsed) return exit_code;
  absl::StatusOr<std::string> path =
      OnePositional(*parsed, "info", "graph file", "nkigraph info FILE");
  if (!path.ok()) return ReportError("info", path.status());
  absl::StatusOr<ArenaGraphSource> source = LoadGraphSource(*path);
  if (!source.ok()) return ReportError("info", source.status());
  if (source->from_bundle) {
    std::cout << "replay bundle: the graph it holds\n";
  }
  PrintInfo(*source->graph, std::cout);
  return kExitOk;
}

}  // namespace nkigraph::tools
