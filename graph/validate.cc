#include "graph/validate.h"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "graph/describe.h"
#include "graph/graph_index.h"
#include "ops/access_pattern.h"
#include "ops/device_profile.h"
#include "ops/instr_view.h"
#include "util/dtype.h"
#include "util/graph_io.h"
#include "util/tensor_roles.h"
#include "util/worker_pool.h"

namespace nkigraph::graph {
namespace {

constexpr int kMaxRanks = 4096;

// A problem with the graph as a whole (its schema version, world or
// streams).
Diagnostic GraphProblem(std::string message) {
  return MakeDiagnostic(DiagnosticKind::kValidation, std::move(message));
}

// A problem with one tensor, named by its position (`id`) and name.
Diagnostic TensorProblem(uint32_t id, absl::string_view name,
                         std::string message) {
  return MakeTensorDiagnostic(DiagnosticKind::kValidation, id, name,
                              std::move(message));
}

void CheckWorld(const proto::World& world, std::vector<Diagnostic>* errors) {
  if (!proto::Target_IsValid(world.target())) {
    errors->push_back(GraphProblem(absl::StrCat(
        "world: unknown target ", static_cast<int>(world.target()))));
  }
  if (world.num_ranks() < 1 || world.num_ranks() > kMaxRanks) {
    errors->push_back(
        GraphProblem(absl::StrCat("world: num_ranks ", world.num_ranks(),
                                  " is not in [1, ", kMaxRanks, "]")));
  }
  if (world.num_cores() < 1 || world.num_cores() > 2) {
    errors->push_back(GraphProblem(absl::StrCat(
        "world: num_cores ", world.num_cores(), " is not 1 or 2")));
  }
  if (world.replica_groups_size() == 0) return;
  std::vector<int> seen(std::min<uint32_t>(world.num_ranks(), kMaxRanks), 0);
  const int size = world.replica_groups(0).ranks_size();
  for (int g = 0; g < world.replica_groups_size(); ++g) {
    const proto::ReplicaGroup& group = world.replica_groups(g);
    if (group.ranks_size() != size || size == 0) {
      errors->push_back(GraphProblem(
          absl::StrCat("world: replica group ", g, " has ", group.ranks_size(),
                       " ranks; every group must have ", size)));
    }
    for (uint32_t rank : group.ranks()) {
      if (rank >= seen.size()) {
        errors->push_back(GraphProblem(absl::StrCat("world: replica group ", g,
                                                    " names rank ", rank,
                                                    ", outside the world")));
      } else if (seen[rank]++) {
        errors->push_back(GraphProblem(absl::StrCat(
            "world: rank ", rank, " is in more than one replica group")));
      }
    }
  }
  for (size_t r = 0; r < seen.size(); ++r) {
    if (!seen[r]) {
      errors->push_back(GraphProblem(
          absl::StrCat("world: rank ", r, " is in no replica group")));
    }
  }
}

void CheckTensor(const proto::Graph& graph, int index,
                 std::vector<Diagnostic>* errors) {
  const proto::Tensor& t = graph.tensors(index);
  // (A hostile name must not make every message huge.)
  const absl::string_view name = absl::string_view(t.name()).substr(0, 80);
  auto error = [&](auto&&... parts) {
    errors->push_back(TensorProblem(index + 1, name, absl::StrCat(parts...)));
  };
  if (t.id() != static_cast<uint32_t>(index + 1)) {
    error("id ", t.id(), " does not match its position (", index + 1, ")");
  }
  if (!IsValidDType(t.dtype())) {
    error("unknown dtype ", static_cast<int>(t.dtype()));
    return;
  }
  if (!proto::MemorySpace_IsValid(t.space()) ||
      t.space() == proto::MEMORY_SPACE_UNSPECIFIED) {
    error("unknown memory space ", static_cast<int>(t.space()));
    return;
  }
  if (!proto::TensorRole_IsValid(t.role())) {
    error("unknown role ", static_cast<int>(t.role()));
  }
  absl::StatusOr<int64_t> elements = ops::ShapeElements(t.shape());
  if (!elements.ok()) {
    error(elements.status().message());
    return;
  }
  if (t.core() >= std::max<uint32_t>(graph.world().num_cores(), 1)) {
    error("belongs to core ", t.core(), ", which does not exist");
  }
  const int64_t esize = DTypeSize(t.dtype());
  if (t.address() < 0) error("negative address ", t.address());
  if (t.address() % esize != 0) {
    error("address ", t.address(), " is not a multiple of its ", esize,
          "-byte elements");
  }
  if (ops::IsOnChip(t.space())) {
    const ops::DeviceProfile& profile = ops::ProfileFor(graph.world().target());
    const int64_t capacity = t.space() == proto::SBUF
                                 ? profile.sbuf_partition_bytes
                                 : profile.psum_partition_bytes;
    const int64_t row_bytes = esize * ops::RowElements(t);
    if (t.partition_offset() + t.shape(0) > profile.num_partitions) {
      error("spans partitions [", t.partition_offset(), ", ",
            t.partition_offset() + t.shape(0), "); the device has ",
            profile.num_partitions);
    }
    int64_t end = 0;
    if (__builtin_add_overflow(t.address(), row_bytes, &end)) {
      end = std::numeric_limits<int64_t>::max();
    }
    if (end > capacity) {
      error(ops::SpaceName(t.space()), " capacity exceeded: bytes [",
            t.address(), ", ", end, ") of each partition, which holds ",
            capacity, " on ", profile.name);
    }
    if (t.role() != proto::ROLE_INTERNAL) {
      error("an input or output must live in HBM");
    }
  } else if (t.address() > ops::kMaxElements) {
    error("address ", t.address(), " is absurd");
  }
  if (t.role() != proto::ROLE_INTERNAL && t.space() == proto::HBM &&
      graph.world().num_cores() > 1) {
    error("an input or output of a multi-core graph must be in shared_hbm");
  }
  if (t.has_value_range()) {
    const proto::ValueRange& range = t.value_range();
    if (!IsHostInput(t)) {
      error("declares a value range but is not an input");
    } else if (range.lo() > range.hi()) {
      error("value range [", range.lo(), ", ", range.hi(), "] is empty");
    }
  }
}

// Inputs are given by name (--input NAME=FILE, a bundle's arrays) and
// outputs read by name (NAME.npy): two inputs, or two outputs, of one name
// would be one to the host, and the second never set or never read.
void CheckHostNames(const proto::Graph& graph,
                    std::vector<Diagnostic>* errors) {
  absl::flat_hash_map<absl::string_view, uint32_t> inputs, outputs;
  auto claim = [&](absl::flat_hash_map<absl::string_view, uint32_t>& names,
                   absl::string_view kind, absl::string_view name,
                   const proto::Tensor& t) {
    const auto [it, inserted] = names.emplace(name, t.id());
    if (inserted) return;
    errors->push_back(
        TensorProblem(t.id(), absl::string_view(t.name()).substr(0, 80),
                      absl::StrCat(kind, " name '", name.substr(0, 80),
                                   "' is taken by tensor ", it->second,
                                   "; the host gives inputs and reads "
                                   "outputs by name")));
  };
  for (const proto::Tensor& t : graph.tensors()) {
    if (IsHostInput(t)) claim(inputs, "input", t.name(), t);
    if (!IsHostOutput(t)) continue;
    if (HostOutputName(t).empty()) {
      errors->push_back(TensorProblem(
          t.id(), absl::string_view(t.name()).substr(0, 80),
          "is an output without a name (an input-output tensor names its "
          "output in output_name)"));
      continue;
    }
    claim(outputs, "output", HostOutputName(t), t);
  }
}

// On-chip tensors of one core and space whose lifetimes and bytes overlap:
// the second allocation would clobber the first while it is live.
void CheckOnChipOverlaps(const proto::Graph& graph,
                         std::vector<Diagnostic>* errors) {
  struct Alloc {
    const proto::Tensor* t;
    int64_t byte_begin, byte_end;
    // The sort key, held here rather than read through `t` on every
    // comparison.
    uint32_t core;
    int space;
    uint32_t live_begin;
  };
  std::vector<Alloc> allocs;
  for (const proto::Tensor& t : graph.tensors()) {
    if (!ops::IsOnChip(t.space()) || !IsValidDType(t.dtype())) continue;
    if (!ops::ShapeElements(t.shape()).ok()) continue;
    allocs.push_back(
        Alloc{&t, t.address(),
              t.address() + DTypeSize(t.dtype()) * ops::RowElements(t),
              t.core(), static_cast<int>(t.space()), t.live_begin()});
  }
  // Sorted by (core, space, live_begin): grouped by (core, space) in one
  // stable pass (CheckTensor made every core one of the world's, at most
  // 2), then each group sorted by live_begin unless the tracer's stack
  // order already did it, as it usually has.
  auto group = [](const Alloc& a) {
    return 2 * static_cast<int>(a.core) + (a.space == proto::PSUM ? 1 : 0);
  };
  constexpr int kGroups = 4;
  std::array<size_t, kGroups + 1> begin = {};
  for (const Alloc& a : allocs) ++begin[group(a) + 1];
  for (int g = 0; g < kGroups; ++g) begin[g + 1] += begin[g];
  {
    std::vector<Alloc> grouped(allocs.size());
    std::array<size_t, kGroups> next;
    std::copy(begin.begin(), begin.end() - 1, next.begin());
    for (const Alloc& a : allocs) grouped[next[group(a)]++] = a;
    allocs = std::move(grouped);
  }
  auto by_live_begin = [](const Alloc& a, const Alloc& b) {
    return a.live_begin < b.live_begin;
  };
  for (int g = 0; g < kGroups; ++g) {
    auto first = allocs.begin() + begin[g],
         last = allocs.begin() + begin[g + 1];
    if (!std::is_sorted(first, last, by_live_begin)) {
      std::sort(first, last, by_live_begin);
    }
  }
  int reported = 0;
  for (size_t i = 0; i < allocs.size() && reported < 20; ++i) {
    const Alloc& a = allocs[i];
    for (size_t j = i + 1; j < allocs.size(); ++j) {
      const Alloc& b = allocs[j];
      if (b.t->core() != a.t->core() || b.t->space() != a.t->space()) break;
      // Sorted by live_begin: every later one starts after `a` ends too.
      if (b.t->live_begin() >= a.t->live_end()) break;
      const bool bytes = a.byte_begin < b.byte_end && b.byte_begin < a.byte_end;
      const bool parts =
          a.t->partition_offset() < b.t->partition_offset() + b.t->shape(0) &&
          b.t->partition_offset() < a.t->partition_offset() + a.t->shape(0);
      if (bytes && parts && b.t->live_begin() < b.t->live_end()) {
        errors->push_back(TensorProblem(
            b.t->id(), b.t->name(),
            absl::StrCat("allocated at ", ops::SpaceName(b.t->space()),
                         " bytes [", b.byte_begin, ", ", b.byte_end,
                         ") over live tensor ", a.t->id(), " ('", a.t->name(),
                         "', bytes [", a.byte_begin, ", ", a.byte_end,
                         ")); it would clobber it")));
        ++reported;
      }
    }
  }
}

// Instruction ids seen so far. Builders number instructions densely from
// 1, so ids below a bound proportional to the count live in a bitmap (no
// hashing, one bit each); any larger id, which a hand-made graph may
// carry, goes to a hash set. Each id has exactly one home, so a duplicate
// is always found.
class IdSet {
 public:
  explicit IdSet(size_t expected) : dense_(4 * expected + 64, false) {}
  // False when `id` was already inserted.
  bool Insert(uint32_t id) {
    if (id < dense_.size()) {
      if (dense_[id]) return false;
      dense_[id] = true;
      return true;
    }
    return sparse_.insert(id).second;
  }

 private:
  std::vector<bool> dense_;
  absl::flat_hash_set<uint32_t> sparse_;
};

// The checks of instruction `pos` of core `c`'s stream, all but the
// duplicate-id one, in the order they are reported; `problem(message,
// tensor)` takes each (tensor: nullptr, or the tensor it is about).
template <typename Problem>
void CheckInstruction(const proto::Graph& graph, int c, int pos,
                      const proto::Instruction& instr, ops::InstrView& view,
                      const Problem& problem) {
  if (instr.file() >= static_cast<uint32_t>(std::max(graph.files_size(), 1)) ||
      instr.scope() >=
          static_cast<uint32_t>(std::max(graph.scopes_size(), 1))) {
    problem("source file or scope index out of range", nullptr);
  }
  if (absl::Status s =
          ops::MakeInstrView(instr, graph.tensors(), graph.world(), &view);
      !s.ok()) {
    problem(std::string(s.message()), nullptr);
    return;
  }
  auto check_owner = [&](const proto::Tensor& t, absl::string_view what) {
    if (t.space() != proto::SHARED_HBM && static_cast<int>(t.core()) != c) {
      problem(absl::StrCat(what, " '", t.name(), "' belongs to core ", t.core(),
                           ", not to this stream's core ", c),
              &t);
    } else if (ops::IsOnChip(t.space()) &&
               (pos < static_cast<int>(t.live_begin()) ||
                pos >= static_cast<int>(t.live_end()))) {
      problem(
          absl::StrCat("uses ", ops::SpaceName(t.space()), " tensor '",
                       t.name(), "' outside its lifetime (instructions [",
                       t.live_begin(), ", ", t.live_end(), ") of the stream)"),
          &t);
    }
  };
  for (int i = 0; i < view.num_operands(); ++i) {
    const ops::OperandInfo& op = view.operand(i);
    if (!op.present()) continue;
    if (op.ap->view_dtype() != proto::DTYPE_UNSPECIFIED &&
        graph.schema_version() < proto::SCHEMA_VERSION_VIEW_DTYPE) {
      problem(absl::StrCat("operand '", view.RoleName(i),
                           "' is a bitcast view, which schema version ",
                           static_cast<int>(graph.schema_version()),
                           " cannot express"),
              op.tensor);
    }
    check_owner(*op.tensor, "operand");
    if (op.has_dynamic()) {
      check_owner(graph.tensors(op.ap->dynamic().tensor_id() - 1),
                  "dynamic offset tensor");
    }
  }
}

// Every instruction's problems, in stream order, after those already in
// `errors`; stops once more than 1000 are listed.
void CheckInstructions(const proto::Graph& graph, size_t total,
                       std::vector<Diagnostic>* errors) {
  IdSet ids(total);
  // One view for every instruction (MakeInstrView sets all it reads),
  // rather than clearing a fresh one's operand table each time.
  ops::InstrView view;
  for (int c = 0; c < graph.streams_size(); ++c) {
    const proto::Stream& stream = graph.streams(c);
    if (stream.core() != static_cast<uint32_t>(c)) {
      errors->push_back(GraphProblem(
          absl::StrCat("stream ", c, " claims core ", stream.core())));
    }
    for (int pos = 0; pos < stream.instructions_size(); ++pos) {
      if (errors->size() > 1000) return;
      const proto::Instruction& instr = stream.instructions(pos);
      auto problem = [&](std::string message, const proto::Tensor* tensor) {
        Diagnostic d = InstructionDiagnostic(DiagnosticKind::kValidation, graph,
                                             instr, std::move(message));
        if (tensor != nullptr) {
          d.tensor_id = tensor->id();
          d.tensor = tensor->name();
        }
        errors->push_back(std::move(d));
      };
      if (!ids.Insert(instr.id())) problem("duplicate instruction id", nullptr);
      CheckInstruction(graph, c, pos, instr, view, problem);
    }
  }
}

// Below this many instructions the checks run on the calling thread.
constexpr size_t kParallelInstructions = 1 << 14;
// Instructions and tensors per task of the parallel passes.
constexpr int kInstructionsPerTask = 1 << 13;
constexpr int kTensorsPerTask = 1 << 14;

// The instructions' own checks split into tasks for a pool, each task a
// run of one stream, and a flag per task: whether it found nothing.
struct InstructionTasks {
  struct Task {
    int core, begin, end;
  };
  std::vector<Task> tasks;
  std::vector<char> clean;

  void Run(const proto::Graph& graph, int t) {
    const Task& task = tasks[t];
    const proto::Stream& stream = graph.streams(task.core);
    auto view = std::make_unique<ops::InstrView>();
    bool found = false;
    auto problem = [&](const std::string&, const proto::Tensor*) {
      found = true;
    };
    constexpr int kFar = kPrefetchInstructionsAhead, kNear = kFar / 2;
    for (int pos = task.begin; pos < task.end && !found; ++pos) {
      PrefetchInstructions(
          pos + kFar < task.end ? &stream.instructions(pos + kFar) : nullptr,
          pos + kNear < task.end ? &stream.instructions(pos + kNear) : nullptr);
      CheckInstruction(graph, task.core, pos, stream.instructions(pos), *view,
                       problem);
    }
    clean[t] = !found;
  }
  bool AllClean() const {
    return std::all_of(clean.begin(), clean.end(), [](char c) { return c; });
  }
};

// The tasks of a parallel pass over the instructions, or nullopt when the
// stream cores or ids (checked here, on this thread) already show that
// CheckInstructions will find something.
std::optional<InstructionTasks> PlanInstructionTasks(const proto::Graph& graph,
                                                     size_t total) {
  IdSet ids(total);
  InstructionTasks plan;
  for (int c = 0; c < graph.streams_size(); ++c) {
    const proto::Stream& stream = graph.streams(c);
    if (stream.core() != static_cast<uint32_t>(c)) return std::nullopt;
    for (const proto::Instruction& instr : stream.instructions()) {
      if (!ids.Insert(instr.id())) return std::nullopt;
    }
    for (int begin = 0; begin < stream.instructions_size();
         begin += kInstructionsPerTask) {
      plan.tasks.push_back(
          {c, begin,
           std::min(stream.instructions_size(), begin + kInstructionsPerTask)});
    }
  }
  plan.clean.assign(plan.tasks.size(), 1);
  return plan;
}

}  // namespace

std::vector<Diagnostic> ValidateGraph(const proto::Graph& graph) {
  std::vector<Diagnostic> errors;
  if (graph.schema_version() > kNewestSchemaVersion) {
    errors.push_back(GraphProblem(absl::StrCat(
        "graph schema version ", static_cast<int>(graph.schema_version()),
        " is newer than this nkigraph reads")));
    return errors;
  }
  if (graph.schema_version() == proto::SCHEMA_VERSION_UNSPECIFIED) {
    errors.push_back(GraphProblem("graph has no schema_version"));
  }
  CheckWorld(graph.world(), &errors);
  if (!errors.empty()) return errors;  // nothing else can be judged
  size_t total = 0;
  for (const proto::Stream& stream : graph.streams()) {
    total += stream.instructions_size();
  }
  std::optional<WorkerPool> pool;
  if (total >= kParallelInstructions ||
      graph.tensors_size() >= kTensorsPerTask) {
    pool.emplace(WorkerPool::MachineThreads());
  }
  // Tensors: each task's problems in its own list, joined in order.
  const int tensor_tasks =
      (graph.tensors_size() + kTensorsPerTask - 1) / kTensorsPerTask;
  std::vector<std::vector<Diagnostic>> tensor_errors(tensor_tasks);
  auto check_tensors = [&](int t) {
    const int end = std::min(graph.tensors_size(), (t + 1) * kTensorsPerTask);
    for (int i = t * kTensorsPerTask; i < end; ++i) {
      CheckTensor(graph, i, &tensor_errors[t]);
    }
  };
  if (pool.has_value()) {
    pool->Run(tensor_tasks, check_tensors);
  } else {
    for (int t = 0; t < tensor_tasks; ++t) check_tensors(t);
  }
  for (std::vector<Diagnostic>& found : tensor_errors) {
    for (Diagnostic& d : found) errors.push_back(std::move(d));
  }
  CheckHostNames(graph, &errors);
  if (!errors.empty()) return errors;

  const int num_cores = static_cast<int>(graph.world().num_cores());
  const bool streams_match = graph.streams_size() == num_cores;
  if (!streams_match || total < kParallelInstructions) {
    CheckOnChipOverlaps(graph, &errors);
    if (!streams_match) {
      errors.push_back(GraphProblem(
          absl::StrCat("graph has ", graph.streams_size(),
                       " instruction streams for ", num_cores, " cores")));
      return errors;
    }
    CheckInstructions(graph, total, &errors);
    return errors;
  }
  // A big graph: the instructions' own checks split over the machine's
  // threads, beside the overlap check. A graph they find anything wrong
  // with is checked again in order on this thread, so what is reported,
  // and in which order, is what one thread finds.
  std::optional<InstructionTasks> plan = PlanInstructionTasks(graph, total);
  bool clean = false;
  if (plan.has_value()) {
    const int tasks = static_cast<int>(plan->tasks.size());
    pool->Run(tasks + 1, [&](int t) {
      if (t == tasks) {
        CheckOnChipOverlaps(graph, &errors);
      } else {
        plan->Run(graph, t);
      }
    });
    clean = plan->AllClean();
  } else {
    CheckOnChipOverlaps(graph, &errors);
  }
  if (!clean) CheckInstructions(graph, total, &errors);
  return errors;
}

absl::Status CheckGraph(const proto::Graph& graph, int max_listed) {
  std::vector<Diagnostic> problems = ValidateGraph(graph);
  if (problems.empty()) return absl::OkStatus();
  const size_t total = problems.size();
  if (static_cast<int>(problems.size()) > max_listed) {
    problems.resize(max_listed);
  }
  Diagnostic invalid = GraphProblem(absl::StrCat(
      "invalid graph (", total, total == 1 ? " problem" : " problems", "):"));
  invalid.notes = std::move(problems);
  if (total > invalid.notes.size()) {
    invalid.notes.push_back(GraphProblem(
        absl::StrCat("… and ", total - invalid.notes.size(), " more")));
  }
  return DiagnosticError(absl::StatusCode::kInvalidArgument, invalid);
}

}  // namespace nkigraph::graph
