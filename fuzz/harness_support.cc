#include "fuzz/harness_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/validate.h"
#include "interp/interpreter.h"
#include "util/diagnostic.h"
#include "util/file_io.h"
#include "util/graph_io.h"

namespace nkigraph::fuzz {
namespace {

// Where the scratch files go: memory (/dev/shm) where the machine has it.
// On a disk file system, replacing a file by rename as WriteFileAtomically
// does writes it to disk for every input (ext4's auto_da_alloc): that was
// over half the time of a small graph's execution.
std::filesystem::path ScratchDirectory() {
  std::error_code error;
  if (std::filesystem::is_directory("/dev/shm", error) &&
      access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";
  }
  return std::filesystem::temp_directory_path();
}

// One scratch file per extension and process, removed at exit.
class ScratchFiles {
 public:
  static ScratchFiles& Get() {
    static ScratchFiles* const files = new ScratchFiles();
    return *files;
  }
  const std::string& PathFor(absl::string_view extension) {
    auto it = paths_.find(std::string(extension));
    if (it != paths_.end()) return it->second;
    const std::string path =
        (ScratchDirectory() /
         absl::StrCat("nkigraph-fuzz-", getpid(), extension))
            .string();
    return paths_.emplace(std::string(extension), path).first->second;
  }

 private:
  ScratchFiles() {
    std::atexit([] {
      for (const auto& [extension, path] : Get().paths_) {
        std::remove(path.c_str());
      }
    });
  }
  std::map<std::string, std::string> paths_;
};

}  // namespace

interp::RunOptions FuzzRunOptions() {
  interp::RunOptions options;
  options.memory_limit_bytes = kMemoryLimitBytes;
  options.max_steps = kMaxSteps;
  options.threads = 1;
  return options;
}

void Require(bool condition, absl::string_view what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz invariant broken: %.*s\n",
               static_cast<int>(what.size()), what.data());
  std::abort();
}

void RequireDiagnosed(const absl::Status& status, absl::string_view where) {
  Require(!status.ok(), absl::StrCat(where, ": expected an error"));
  Require(!status.message().empty(),
          absl::StrCat(where, ": an error without a message"));
  Require(DiagnosticOf(status).has_value(),
          absl::StrCat(where,
                       ": an error without a diagnostic: ", status.message()));
}

absl::Status ReadMessageBytes(absl::string_view bytes,
                              absl::string_view extension,
                              google::protobuf::Message* message) {
  const std::string& path = ScratchFiles::Get().PathFor(extension);
  Require(WriteFileAtomically(path, bytes).ok(),
          "cannot write the scratch file");
  return ReadMessage(path, message);
}

absl::StatusOr<proto::Graph> ReadGraphBytes(absl::string_view bytes,
                                            absl::string_view extension) {
  const std::string& path = ScratchFiles::Get().PathFor(extension);
  Require(WriteFileAtomically(path, bytes).ok(),
          "cannot write the scratch file");
  return ReadGraph(path);
}

uint64_t Fingerprint(absl::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash = (hash ^ c) * 1099511628211ull;
  }
  return hash;
}

int64_t InstructionCount(const proto::Graph& graph) {
  int64_t count = 0;
  for (const proto::Stream& stream : graph.streams()) {
    count += stream.instructions_size();
  }
  return count;
}

Outcome CheckAndRun(const proto::Graph& graph, uint64_t seed) {
  const std::vector<Diagnostic> problems = graph::ValidateGraph(graph);
  for (const Diagnostic& problem : problems) {
    Require(!Render(problem).empty(), "a validation problem renders empty");
  }
  const absl::Status checked = graph::CheckGraph(graph);
  Require(checked.ok() == problems.empty(),
          "CheckGraph and ValidateGraph disagree");
  if (!checked.ok()) {
    RequireDiagnosed(checked, "CheckGraph");
    return Outcome::kInvalid;
  }

  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(graph, FuzzRunOptions());
  if (!created.ok()) {
    // The graph passed validation, so only its size may stop it here.
    Require(created.status().code() == absl::StatusCode::kResourceExhausted,
            absl::StrCat("a valid graph refused by Interpreter::Create: ",
                         created.status().ToString()));
    RequireDiagnosed(created.status(), "Interpreter::Create");
    return Outcome::kRefused;
  }
  interp::Interpreter& interp = **created;
  if (absl::Status filled = interp.FillRandomInputs(seed); !filled.ok()) {
    RequireDiagnosed(filled, "FillRandomInputs");
    return Outcome::kRefused;
  }
  Require(interp.MissingInputs().empty(),
          "inputs missing after FillRandomInputs");
  if (absl::Status ran = interp.Run(); !ran.ok()) {
    RequireDiagnosed(ran, "Run");
    return ran.code() == interp::kDeviceErrorCode ? Outcome::kDeviceError
                                                  : Outcome::kRefused;
  }
  for (const std::string& name : interp.OutputNames()) {
    for (auto form : {interp::Interpreter::HostForm::kValues,
                      interp::Interpreter::HostForm::kRawBits16}) {
      absl::StatusOr<HostArray> output = interp.GetOutput(name, form);
      Require(output.ok(),
              absl::StrCat("output '", name, "' unreadable after a run: ",
                           output.status().ToString()));
      Require(static_cast<int64_t>(output->values()) == output->num_elements(),
              absl::StrCat("output '", name, "' holds the wrong count"));
    }
  }
  return Outcome::kDone;
}

}  // namespace nkigraph::fuzz
