// nkigraph run GRAPH --input NAME=FILE.npy... --output-dir DIR: executes a
// graph on the interpreter.
#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cost/cost_table.h"
#include "cost/schedule.h"
#include "cost/trace_json.h"
#include "graph/dependencies.h"
#include "graph/graph_index.h"
#include "interp/device_memory.h"
#include "interp/interpreter.h"
#include "tools/commands.h"
#include "tools/processes.h"
#include "tools/run_flags.h"
#include "tools/run_support.h"
#include "util/file_io.h"
#include "util/graph_io.h"
#include "util/graph_source.h"
#include "util/memory_budget.h"
#include "util/npy.h"
#include "util/status_macros.h"

namespace nkigraph::tools {
namespace {

constexpr char kUsage[] =
    R"(usage: nkigraph run GRAPH [--input NAME=FILE.npy]... [--random-inputs SEED]
                    --output-dir DIR [--dump DIR [--dump-filter REGEX]]
                    [--save-bundle BUNDLE.pb] [--memory-limit BYTES]
                    [--max-steps N] [--timeline FILE.json] [--raw-bits]
                    [--threads N] [--peer-timeout SECONDS] [--quiet]
                    [--timings]
                    [--diagnostics json]
       mpirun -np P nkigraph run GRAPH ...

Executes GRAPH (.pb or .pbtxt, or a replay bundle's graph) on the
memory-model device and writes DIR/<output>.npy for every output. Inputs
are .npy files: float32 (rounded to the declared dtype) or int32 for
integer tensors; per-rank tensors of a multi-rank graph carry a leading
[num_ranks] axis.

options:
  -i, --input NAME=FILE.npy   an input (repeatable; every input is needed
                              unless --random-inputs is given)
  --random-inputs SEED        fill the inputs not given with deterministic
                              random values (floats in [-1, 1))
  -o, --output-dir DIR        where the outputs are written
  --dump DIR                  also write each tensor the filter names every
                              time an instruction writes it, as
                              DIR/<seq>_<tensor>_i<instr>[_r<rank>][_c<core>].npy;
                              after a device error, also the state of every
                              such tensor as DIR/final_*.npy
  --dump-filter REGEX         the tensors to dump: a regex searched in the
                              tensor name (default: all; anchor with ^...$)
  --save-bundle FILE          write a replay bundle: the graph, its inputs
                              (as the device holds them) and its outputs;
                              `nkigraph replay FILE` re-executes it
  --raw-bits                  write 16-bit outputs (bfloat16, float16, int16,
                              uint16) as uint16 .npy files of their raw
                              bits, in the bundle too (default: float32 or
                              int32 values)
  --memory-limit BYTES        the most the run may hold (default 8 GiB):
                              device memory with its shadow state, race-
                              detection state, and the host arrays (inputs
                              by their file size, outputs, bundle copies);
                              checked before the run where the graph and
                              the input files tell it, and as it grows
  --max-steps N               stop after N instructions (default: no
                              limit), naming the instruction where it
                              stopped
  --timeline FILE.json        also write the cost model's Chrome trace of
                              the run (see `nkigraph profile`), scheduled
                              with the addresses the run's dynamic offsets
                              really reached (rank 0's)
  --threads N                 run the programs (ranks x cores) on N threads
                              (default: one per core of the machine); the
                              results are the same for every N
  --peer-timeout SECONDS      under mpirun: the longest any process
                              waits for another (default 300) before the
                              run fails, so a killed process stops the rest
  -q, --quiet                 no progress line on stderr (there is one
                              only when stderr is a terminal)
  --timings                   print on stderr the wall seconds of each
                              phase (loading the graph and sizing the
                              device, the inputs, the run, the outputs)
                              and the most the run held, as its memory
                              budget counts it and as peak RSS
%s  -h, --help                  show this help

Under `mpirun -np P` (a build with Open MPI) the ranks are spread over the
P processes, a contiguous block each; each holds only its ranks' device
memory (--memory-limit is per process), reads only its ranks' rows of
per-rank inputs and writes them into the output files. Outputs, bundles,
dumps and errors are the single process's (with --dump the processes take
turns, so it is slower).

Graph problems are listed one per line: the first 20 and a count of the
rest (`nkigraph check` lists all).

Exit status: 0 success, 1 device error (race, deadlock, out-of-bounds
access, read of never-written memory...), 2 bad usage or input, or a
memory or step limit reached.
)";

constexpr char kVerb[] = "run";

// Schedules `graph` with the dependencies of the run (its dynamic offsets
// reaching only `reached`) and writes the Chrome trace; returns the
// estimated latency.
using ReachedOffsets = graph::ResolvedOffsets;

absl::StatusOr<double> WriteTimeline(const proto::Graph& ran,
                                     const ReachedOffsets& reached,
                                     const std::string& path) {
  NKI_ASSIGN_OR_RETURN(std::unique_ptr<graph::GraphIndex> index,
                       graph::GraphIndex::Build(ran));
  const std::vector<graph::Dependency> deps = graph::AnalyzeDependencies(
      *index, {.drop_implied = false, .resolved = &reached});
  NKI_ASSIGN_OR_RETURN(
      cost::Schedule schedule,
      cost::ScheduleGraph(*index, cost::CostTableFor(ran.world().target()),
                          deps));
  NKI_RETURN_IF_ERROR(cost::WriteChromeTraceFile(schedule, path));
  return schedule.makespan_ns;
}

// Reads input `name` from `file`: in a process holding some of the ranks,
// a per-rank input's rows for those ranks alone (when the file has a row
// per rank; otherwise all of it, for SetInput to refuse as it would).
absl::StatusOr<HostArray> ReadInputFile(const interp::Interpreter& interp,
                                        const std::string& name,
                                        const std::string& file,
                                        MemoryBudget& budget,
                                        std::vector<ScopedCharge>& held) {
  const proto::Tensor* t = interp.FindInput(name);
  const int ranks = static_cast<int>(interp.graph().world().num_ranks());
  const interp::RankBlock block = interp.HeldRanks();
  if (t == nullptr || !t->per_rank() || ranks <= 1 || block.size() == ranks) {
    return ReadNpyCharged(file, budget, held);
  }
  int64_t total_rows = -1;
  absl::StatusOr<HostArray> rows =
      ReadNpyRows(file, block.first, block.size(), &total_rows);
  if (total_rows != ranks) return ReadNpyCharged(file, budget, held);
  if (!rows.ok()) return rows.status();
  ScopedCharge charge(&budget, HostArrayBytes(rows->num_elements()),
                      absl::StrCat("host memory for the input '", file, "'"));
  NKI_RETURN_IF_ERROR(charge.status());
  held.push_back(std::move(charge));
  return rows;
}

int RunIn(const ParsedArgs& parsed_args, Processes& processes, bool& agreed);

// The wall time of the run's phases, for --timings.
class PhaseTimer {
 public:
  void End(const char* phase) {
    const absl::Time now = absl::Now();
    phases_.emplace_back(phase, absl::ToDoubleSeconds(now - start_));
    start_ = now;
  }
  // "timings: setup 0.81 s, inputs 9.20 s, ...; held at most N bytes;
  // peak RSS M bytes": what the budget counted, and what the process
  // really held.
  void Print(int64_t peak_bytes) const {
    std::vector<std::string> parts;
    for (const auto& [phase, seconds] : phases_) {
      parts.push_back(absl::StrFormat("%s %.2f s", phase, seconds));
    }
    // The process's own peak resident set (Linux reports KiB).
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    std::cerr << "timings: " << absl::StrJoin(parts, ", ") << "; held at most "
              << peak_bytes << " bytes; peak RSS "
              << int64_t{usage.ru_maxrss} * 1024 << " bytes\n";
  }

 private:
  absl::Time start_ = absl::Now();
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace

int RunRun(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> parsed =
      ParseArgs(args, {{"--input", "-i", /*takes_value=*/true,
                        /*repeated=*/true},
                       {"--random-inputs", "", true, false},
                       {"--output-dir", "-o", true, false},
                       {"--dump", "", true, false},
                       {"--dump-filter", "", true, false},
                       {"--save-bundle", "", true, false},
                       kMemoryLimitFlag,
                       {"--timeline", "", true, false},
                       {"--raw-bits", "", false, false},
                       kMaxStepsFlag,
                       kThreadsFlag,
                       kPeerTimeoutFlag,
                       kQuietFlag,
                       {"--timings", "", false, false},
                       DiagnosticsFlag()});
  if (!parsed.ok()) return ReportError(kVerb, parsed.status());
  if (parsed->help) {
    std::cout << absl::StrReplaceAll(kUsage, {{"%s", kDiagnosticsHelp}});
    return kExitOk;
  }
  if (absl::Status status = ApplyDiagnosticsFlag(*parsed); !status.ok()) {
    return ReportError(kVerb, status);
  }
  absl::StatusOr<double> timeout = PeerTimeout(*parsed);
  if (!timeout.ok()) return ReportError(kVerb, timeout.status());
  absl::StatusOr<std::unique_ptr<Processes>> joined = Processes::Join(*timeout);
  if (!joined.ok()) return ReportError(kVerb, joined.status());
  Processes& processes = **joined;
  // An error only some processes met (a file one cannot read, a peer that
  // stopped) ends them all, so that none waits for the others.
  bool agreed = false;
  const int code = RunIn(*parsed, processes, agreed);
  if (processes.several() && code != kExitOk && !agreed) {
    processes.Abort(code);
  }
  return code;
}

namespace {

int RunIn(const ParsedArgs& parsed_args, Processes& processes, bool& agreed) {
  const ParsedArgs* parsed = &parsed_args;
  absl::StatusOr<std::string> graph_path_or = OnePositional(
      *parsed, kVerb, "graph",
      "nkigraph run GRAPH --input NAME=FILE.npy... --output-dir DIR");
  if (!graph_path_or.ok()) return ReportError(kVerb, graph_path_or.status());
  const std::string& graph_path = *graph_path_or;
  if (!parsed->Has("--output-dir")) {
    return ReportError(kVerb,
                       "missing --output-dir DIR (where the outputs "
                       "are written)");
  }
  const std::string output_dir = parsed->Get("--output-dir");
  if (parsed->Has("--dump-filter") && !parsed->Has("--dump")) {
    return ReportError(kVerb, "--dump-filter needs --dump DIR");
  }
  const std::string bundle_path = parsed->Get("--save-bundle");
  if (parsed->Has("--save-bundle") && !EndsWith(bundle_path, ".pb") &&
      !EndsWith(bundle_path, ".pbtxt")) {
    return ReportError(kVerb, absl::StrCat("bundle '", bundle_path,
                                           "' must end in .pb or .pbtxt"));
  }

  PhaseTimer timer;
  interp::RunOptions options;
  if (absl::Status status = ApplyRunFlags(*parsed, &options); !status.ok()) {
    return ReportError(kVerb, status);
  }
  // One account for everything the run holds (device and host); per
  // process when the run is spread over several.
  MemoryBudget budget(options.memory_limit_bytes);
  options.budget = &budget;
  options.transport = processes.transport();
  std::vector<ScopedCharge> held;
  std::unique_ptr<TensorDumper> dumper;
  if (parsed->Has("--dump")) {
    absl::StatusOr<std::unique_ptr<TensorDumper>> created =
        TensorDumper::Create(parsed->Get("--dump"),
                             parsed->Get("--dump-filter", ".*"));
    if (!created.ok()) return ReportError(kVerb, created.status());
    dumper = *std::move(created);
    dumper->Attach(options);
  }

  // The graph as read: about its file's size.
  ScopedCharge graph_charge(&budget, FileBytes(graph_path),
                            absl::StrCat("host memory for '", graph_path, "'"));
  if (!graph_charge.status().ok()) {
    return ReportError(kVerb, graph_charge.status());
  }
  // On an arena, which the interpreter runs where it lies; parsed on the
  // run's threads (--threads).
  absl::StatusOr<ArenaGraphSource> source =
      LoadGraphSource(graph_path, options.threads);
  if (!source.ok()) return ReportError(kVerb, source.status());
  if (source->from_bundle) {
    std::cerr << "nkigraph run: '" << graph_path
              << "' is a replay bundle; running its graph (nkigraph replay "
                 "runs it with the bundle's inputs)\n";
  }
  const bool raw_bits = parsed->Has("--raw-bits");
  // Each input file mapped once, by path (MapNpy): the memory plan counts
  // the files that cannot be, and the inputs are set from the mappings.
  std::map<std::string, absl::StatusOr<MappedNpy>> mapped_files;
  auto mapping = [&](const std::string& file) -> absl::StatusOr<MappedNpy>& {
    auto it = mapped_files.find(file);
    if (it == mapped_files.end()) {
      it = mapped_files.emplace(file, MapNpy(file)).first;
    }
    return it->second;
  };
  {
    // Before anything large is allocated: does the whole run fit? A
    // process holding some of the ranks holds about their share of it.
    const int ranks = std::max<int>(1, source->graph->world().num_ranks());
    const int held =
        processes.several()
            ? interp::BlockOf(processes.index(), processes.count(), ranks)
                  .size()
            : ranks;
    auto share = [&](int64_t bytes) { return bytes / ranks * held; };
    // Files whose values the device takes as they are become device
    // memory (mapped, or copied and let go page by page); the others are
    // read into host arrays first.
    int64_t input_files = 0;
    for (const std::string& setting : parsed->All("--input")) {
      const size_t eq = setting.find('=');
      if (eq == std::string::npos) continue;
      const std::string file = setting.substr(eq + 1);
      if (!absl::IsFailedPrecondition(mapping(file).status())) continue;
      input_files += FileBytes(file);
    }
    if (processes.several()) input_files = share(input_files);
    const bool bundle = parsed->Has("--save-bundle");
    absl::StatusOr<int64_t> device =
        interp::DeviceMemory::BytesNeeded(*source->graph, held);
    if (device.ok()) {
      if (absl::Status fits = CheckMemoryPlan(
              budget,
              {{"device memory and its shadow state", *device},
               {"input files", input_files},
               // Written a rank at a time; read whole for a bundle.
               {"outputs on the host",
                bundle ? share(HostOutputBytes(*source->graph, raw_bits))
                       : HostOutputWriteBytes(*source->graph, raw_bits)},
               {"the bundle's copies",
                bundle && processes.first()
                    ? HostInputBytes(*source->graph, /*raw_bits16=*/true) * 2 +
                          HostOutputBytes(*source->graph, raw_bits)
                    : 0}});
          !fits.ok()) {
        return ReportError(
            kVerb, WithContext(absl::StrCat("'", graph_path, "'"), fits));
      }
    }
  }
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(std::move(source->graph), options);
  if (!created.ok()) {
    return ReportError(kVerb, WithContext(absl::StrCat("'", graph_path, "'"),
                                          created.status()));
  }
  interp::Interpreter& interp = **created;
  if (dumper) dumper->SetInterpreter(&interp);
  timer.End("setup");

  std::set<std::string> given;
  for (const std::string& setting : parsed->All("--input")) {
    absl::StatusOr<std::pair<std::string, std::string>> kv =
        SplitKeyValue(setting, "--input");
    if (!kv.ok()) return ReportError(kVerb, kv.status());
    const auto& [name, file] = *kv;
    if (!given.insert(name).second) {
      return ReportError(kVerb,
                         absl::StrCat("input '", name, "' is given twice"));
    }
    // Values the device takes as they are (float32, int32, uint16 raw
    // bits) go from the mapped file straight into device memory, this
    // process's ranks' rows alone; others are converted on the host first.
    absl::Status status;
    const absl::StatusOr<MappedNpy>& mapped = mapping(file);
    if (mapped.ok()) {
      const interp::Interpreter::InputFile in_file{
          mapped->file.fd(), static_cast<const char*>(mapped->values) -
                                 mapped->file.bytes().data()};
      status =
          interp.SetInputValues(name, mapped->dtype, mapped->shape,
                                mapped->elements, mapped->values, &in_file);
    } else if (!absl::IsFailedPrecondition(mapped.status())) {
      return ReportError(kVerb, absl::StrCat("input '", name,
                                             "': ", mapped.status().message()));
    } else {
      std::vector<ScopedCharge> reading;  // until the device holds it
      absl::StatusOr<HostArray> array =
          ReadInputFile(interp, name, file, budget, reading);
      if (!array.ok()) {
        return ReportError(
            kVerb,
            absl::StrCat("input '", name, "': ", array.status().message()));
      }
      array->name = name;
      status = interp.SetInput(*array);
    }
    mapped_files.erase(file);  // the device holds it now
    if (!status.ok()) {
      return ReportError(
          kVerb, absl::StrCat(status.message(), " (from '", file, "')"));
    }
  }
  if (parsed->Has("--random-inputs")) {
    absl::StatusOr<uint64_t> seed =
        ParseCount(parsed->Get("--random-inputs"), "--random-inputs");
    if (!seed.ok()) return ReportError(kVerb, seed.status());
    if (absl::Status status = interp.FillRandomInputs(*seed); !status.ok()) {
      return ReportError(kVerb, status);
    }
  }
  if (std::vector<std::string> missing = interp.MissingInputs();
      !missing.empty()) {
    return ReportError(
        kVerb, absl::StrCat("missing input", missing.size() > 1 ? "s " : " ",
                            "'", absl::StrJoin(missing, "', '"),
                            "' (give --input NAME=FILE.npy, or "
                            "--random-inputs SEED)"));
  }

  timer.End("inputs");
  proto::Bundle bundle;
  if (parsed->Has("--save-bundle")) {
    *bundle.mutable_graph() = interp.graph();
    // Read before the run: inputs written in place are overwritten by it.
    std::vector<ScopedCharge> copies;
    absl::StatusOr<std::vector<HostArray>> inputs =
        ReadInputs(interp, interp::Interpreter::HostForm::kRawBits16, &copies);
    if (!inputs.ok()) return ReportError(kVerb, inputs.status());
    // The bundle is one file: the first process joins every input.
    inputs = processes.GatherToFirst(interp, *std::move(inputs));
    if (!inputs.ok()) return ReportError(kVerb, inputs.status());
    if (absl::Status status =
            AddToBundle(*inputs, /*outputs=*/false, bundle, budget, held);
        !status.ok()) {
      return ReportError(kVerb, status);
    }
  }

  ReachedOffsets reached;
  if (parsed->Has("--timeline")) interp.RecordResolvedOffsets(&reached);
  if (absl::Status status = interp.Run(); !status.ok()) {
    // Every process reports the run's error, the same one.
    agreed = AgreedRunError(status);
    const int code = ReportRunError(kVerb, status);
    if (code != kExitFailure) return code;
    if (dumper) {
      // Each process dumps its ranks; every one reports the run's count.
      const absl::Status dumped = dumper->DumpFinalState();
      const absl::StatusOr<int64_t> files =
          processes.Sum(dumper->files_written());
      if (!dumped.ok() || !files.ok()) {
        ReportError(
            kVerb,
            absl::StrCat("cannot dump the final state: ",
                         (dumped.ok() ? files.status() : dumped).message()));
      } else {
        std::cerr << "nkigraph run: dumped " << *files << " file(s) to "
                  << parsed->Get("--dump")
                  << " (final_*.npy: the state when the run stopped)\n";
      }
    }
    // A bundle without outputs still reproduces the failure.
    if (parsed->Has("--save-bundle") && processes.first()) {
      if (absl::Status saved = WriteMessage(bundle, bundle_path); !saved.ok()) {
        ReportError(kVerb, absl::StrCat("cannot write bundle '", bundle_path,
                                        "': ", saved.message()));
      } else {
        std::cerr << "nkigraph run: wrote bundle " << bundle_path
                  << " (inputs only; replaying it reproduces the error)\n";
      }
    }
    return kExitFailure;
  }
  timer.End("run");
  // Every process's dump files, for the first one's report.
  int64_t dumped_files = 0;
  if (dumper) {
    absl::StatusOr<int64_t> files = processes.Sum(dumper->files_written());
    if (!files.ok()) return ReportError(kVerb, files.status());
    dumped_files = *files;
  }
  if (dumper && !dumper->status().ok()) {
    return ReportError(kVerb, absl::StrCat("cannot write a dump file: ",
                                           dumper->status().message()));
  }

  const interp::Interpreter::HostForm output_form =
      raw_bits ? interp::Interpreter::HostForm::kRawBits16
               : interp::Interpreter::HostForm::kValues;
  if (absl::Status status =
          WriteOutputsTogether(processes, interp, output_dir, output_form);
      !status.ok()) {
    return ReportError(kVerb, status);
  }
  timer.End("outputs");
  if (parsed->Has("--timings")) timer.Print(budget.peak());
  // The bundle is one file: the first process joins every output.
  absl::StatusOr<std::vector<HostArray>> outputs;
  if (parsed->Has("--save-bundle")) {
    outputs = ReadOutputs(interp, output_form, &held);
    if (!outputs.ok()) return ReportError(kVerb, outputs.status());
    outputs = processes.GatherToFirst(interp, *std::move(outputs));
    if (!outputs.ok()) return ReportError(kVerb, outputs.status());
  }
  if (!processes.first()) return kExitOk;
  if (parsed->Has("--save-bundle")) {
    if (absl::Status status =
            AddToBundle(*outputs, /*outputs=*/true, bundle, budget, held);
        !status.ok()) {
      return ReportError(kVerb, status);
    }
    if (absl::Status status = WriteMessage(bundle, bundle_path); !status.ok()) {
      return ReportError(kVerb,
                         absl::StrCat("cannot write bundle '", bundle_path,
                                      "': ", status.message()));
    }
  }
  double estimate_ns = 0;
  if (parsed->Has("--timeline")) {
    absl::StatusOr<double> written =
        WriteTimeline(interp.graph(), reached, parsed->Get("--timeline"));
    if (!written.ok()) return ReportError(kVerb, written.status());
    estimate_ns = *written;
  }
  const std::vector<std::string> names = interp.OutputNames();
  std::cout << "ran " << graph_path << ": " << interp.instructions_executed()
            << " instructions; wrote " << absl::StrJoin(names, ", ") << " to "
            << output_dir;
  if (dumper) {
    std::cout << "; dumped " << dumped_files << " file(s) to "
              << parsed->Get("--dump");
  }
  if (parsed->Has("--save-bundle")) std::cout << "; bundle " << bundle_path;
  if (parsed->Has("--timeline")) {
    std::cout << "; timeline " << parsed->Get("--timeline") << " (estimated "
              << absl::StrFormat("%.3f", estimate_ns / 1000.0) << " us)";
  }
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

}  // namespace nkigraph::tools
