#include "tools/processes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/run_support.h"
#include "util/dtype.h"
#include "util/host_array.h"
#include "util/memory_budget.h"
#include "util/npy.h"
#include "util/status_macros.h"
#include "util/tensor_roles.h"

#ifdef NKIGRAPH_HAVE_MPI
#include "dist/mpi_transport.h"
#endif

namespace nkigraph::tools {
namespace {

bool PerRankRows(const interp::Interpreter& interp, const HostArray& array) {
  const proto::Tensor* t = interp.FindOutput(array.name);
  if (t == nullptr) t = interp.FindInput(array.name);
  return t != nullptr && t->per_rank() &&
         interp.graph().world().num_ranks() > 1;
}

}  // namespace

int LaunchedProcesses() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(name);
    int n = 0;
    if (value != nullptr && absl::SimpleAtoi(value, &n) && n > 0) return n;
  }
  return 1;
}

bool BuiltWithMpi() {
#ifdef NKIGRAPH_HAVE_MPI
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Processes>> Processes::Join(
    double timeout_seconds) {
  const int launched = LaunchedProcesses();
  if (launched <= 1) {
    return std::unique_ptr<Processes>(new Processes(nullptr));
  }
#ifdef NKIGRAPH_HAVE_MPI
  // The largest MPI message, smaller only to test that longer ones travel
  // in pieces.
  int64_t max_message_bytes = dist::MpiTransport::kDefaultMaxMessageBytes;
  if (const char* value = std::getenv(kMaxMessageBytesVariable)) {
    if (!absl::SimpleAtoi(value, &max_message_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          kMaxMessageBytesVariable, "='", value, "' is not a number of bytes"));
    }
  }
  NKI_ASSIGN_OR_RETURN(
      std::unique_ptr<dist::MpiTransport> transport,
      dist::MpiTransport::Join(timeout_seconds, max_message_bytes));
  return std::unique_ptr<Processes>(new Processes(std::move(transport)));
#else
  (void)timeout_seconds;
  return absl::FailedPreconditionError(absl::StrCat(
      "started as one of ", launched,
      " processes, but this nkigraph was built without MPI: running ranks "
      "across processes needs a build that found Open MPI (openmpi-bin, "
      "libopenmpi-dev); run it as one process instead"));
#endif
}

Processes::~Processes() = default;

absl::Status Processes::Barrier() const {
  if (!transport_) return absl::OkStatus();
  return transport_->AllGather({}).status();
}

void Processes::Abort(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef NKIGRAPH_HAVE_MPI
  if (transport_) {
    static_cast<dist::MpiTransport*>(transport_.get())->Abort(exit_code);
  }
#endif
  std::_Exit(exit_code);
}

absl::StatusOr<std::vector<HostArray>> Processes::GatherToFirst(
    const interp::Interpreter& interp, std::vector<HostArray> arrays) const {
  return tools::GatherToFirst(transport_.get(), interp, std::move(arrays));
}

absl::StatusOr<int> Processes::WorstExitCode(int mine) const {
  if (!several()) return mine;
  NKI_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                       transport_->AllGather(absl::StrCat(mine)));
  int worst = mine;
  for (const std::string& code : all) {
    int theirs = 0;
    if (absl::SimpleAtoi(code, &theirs)) worst = std::max(worst, theirs);
  }
  return worst;
}

absl::StatusOr<int64_t> Processes::Sum(int64_t mine) const {
  if (!several()) return mine;
  NKI_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                       transport_->AllGather(absl::StrCat(mine)));
  int64_t sum = 0;
  for (const std::string& value : all) {
    int64_t theirs = 0;
    if (!absl::SimpleAtoi(value, &theirs)) {
      return absl::InternalError("malformed count from another process");
    }
    sum += theirs;
  }
  return sum;
}

absl::StatusOr<std::vector<HostArray>> GatherToFirst(
    interp::Transport* transport, const interp::Interpreter& interp,
    std::vector<HostArray> arrays) {
  if (transport == nullptr || transport->num_processes() <= 1) return arrays;
  const int count = transport->num_processes();
  if (transport->process() != 0) {
    for (const HostArray& array : arrays) {
      if (!PerRankRows(interp, array)) continue;
      NKI_ASSIGN_OR_RETURN(const std::string bytes, SerializeNpy(array));
      NKI_RETURN_IF_ERROR(transport->Send(0, bytes));
    }
    return std::vector<HostArray>{};
  }
  const int ranks = static_cast<int>(interp.graph().world().num_ranks());
  for (HostArray& array : arrays) {
    if (!PerRankRows(interp, array)) continue;
    for (int q = 1; q < count; ++q) {
      NKI_ASSIGN_OR_RETURN(const std::string bytes, transport->Receive(q));
      NKI_ASSIGN_OR_RETURN(HostArray part,
                           ParseNpy(bytes, absl::StrCat("process ", q)));
      array.Append(part);
    }
    array.shape[0] = ranks;
  }
  return arrays;
}

absl::StatusOr<double> PeerTimeout(const ParsedArgs& parsed) {
  if (!parsed.Has(kPeerTimeoutFlag.name)) return kDefaultPeerTimeoutSeconds;
  double seconds = 0;
  if (!absl::SimpleAtod(parsed.Get(kPeerTimeoutFlag.name), &seconds) ||
      !(seconds > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--peer-timeout '", parsed.Get(kPeerTimeoutFlag.name),
                     "' is not a positive number of seconds"));
  }
  return seconds;
}

bool AgreedRunError(const absl::Status& status) {
  return status.code() != absl::StatusCode::kDeadlineExceeded &&
         status.code() != absl::StatusCode::kInternal;
}

absl::Status WriteOutputsTogether(const Processes& processes,
                                  const interp::Interpreter& interp,
                                  const std::string& dir,
                                  interp::Interpreter::HostForm form) {
  if (processes.first()) NKI_RETURN_IF_ERROR(MakeDirectories(dir));
  const int ranks = static_cast<int>(interp.graph().world().num_ranks());
  const interp::RankBlock held = interp.HeldRanks();
  const bool raw_bits16 = form == interp::Interpreter::HostForm::kRawBits16;
  std::vector<const proto::Tensor*> outputs;
  for (const std::string& name : interp.OutputNames()) {
    if (const proto::Tensor* t = interp.FindOutput(name)) outputs.push_back(t);
  }
  auto per_rank = [&](const proto::Tensor& t) {
    return t.per_rank() && ranks > 1;
  };
  auto path = [&](const proto::Tensor& t) {
    return absl::StrCat(dir, "/", SafeFileName(HostOutputName(t)), ".npy");
  };
  // This process's rows of a per-rank output, read and written one rank at
  // a time (the first rank's write makes the file when `create`).
  auto write_rows = [&](const proto::Tensor& t, bool create) -> absl::Status {
    std::vector<int64_t> shape = interp.HostShape(t);
    shape[0] = 1;
    const bool two_byte_bits = raw_bits16 && DTypeSize(t.dtype()) == 2;
    for (int r = held.first; r < held.end; ++r) {
      ScopedCharge charge(
          &interp.budget(),
          HostArrayBytes(ShapeElementCount(shape), two_byte_bits),
          absl::StrCat("host memory for a rank's rows of output '",
                       HostOutputName(t), "'"));
      NKI_RETURN_IF_ERROR(charge.status());
      NKI_ASSIGN_OR_RETURN(HostArray rows,
                           interp.ReadTensor(t.id(), r, 0, form));
      rows.name = HostOutputName(t);
      rows.shape = shape;
      NKI_RETURN_IF_ERROR(WriteNpyRows(path(t) + ".part", rows, ranks, r,
                                       create && r == held.first));
    }
    return absl::OkStatus();
  };
  // The first process makes every file (and writes its rows, or the whole
  // of an output that is not per-rank) before the others write theirs
  // into it. Every process reaches both barriers, failed or not.
  absl::Status status;
  if (processes.first()) {
    for (const proto::Tensor* t : outputs) {
      if (!status.ok()) break;
      if (per_rank(*t)) {
        status = write_rows(*t, /*create=*/true);
        continue;
      }
      std::vector<ScopedCharge> charge;
      status = ChargeHostArray(interp, *t, raw_bits16, "output", &charge);
      if (!status.ok()) break;
      absl::StatusOr<HostArray> whole =
          interp.GetOutput(HostOutputName(*t), form);
      status = whole.ok() ? WriteNpy(path(*t), *whole) : whole.status();
    }
  }
  NKI_RETURN_IF_ERROR(processes.Barrier());
  if (!processes.first()) {
    for (const proto::Tensor* t : outputs) {
      if (!status.ok()) break;
      if (per_rank(*t)) status = write_rows(*t, /*create=*/false);
    }
  }
  NKI_RETURN_IF_ERROR(processes.Barrier());
  if (processes.first()) {
    for (const proto::Tensor* t : outputs) {
      if (!status.ok()) break;
      if (!per_rank(*t)) continue;
      const std::string final_path = path(*t);
      if (std::rename((final_path + ".part").c_str(), final_path.c_str()) !=
          0) {
        status = absl::InternalError(
            absl::StrCat("cannot rename '", final_path, ".part'"));
      }
    }
  }
  return status;
}

}  // namespace nkigraph::tools
