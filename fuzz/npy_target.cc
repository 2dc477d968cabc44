// The npy target: `.npy` bytes as `nkigraph run --input` reads them.
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "interp/interpreter.h"
#include "util/dtype.h"
#include "util/npy.h"

namespace nkigraph::fuzz {
namespace {

// Arrays bigger than this parse and round-trip but are not run.
constexpr int64_t kMaxRunElements = int64_t{1} << 16;

bool SameBits(const HostArray& a, const HostArray& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.values() == b.values() &&
         (a.values() == 0 ||
          std::memcmp(a.data(), b.data(), a.values() * a.value_bytes()) == 0);
}

// The device dtype an array loads into unchanged.
proto::DType ExactDType(proto::DType host) {
  switch (host) {
    case proto::INT32:
      return proto::INT32;
    case proto::UINT16:
      return proto::BFLOAT16;
    default:
      return proto::FLOAT32;
  }
}

// One that rounds or reinterprets: loading may refuse it or change values.
proto::DType LossyDType(proto::DType host) {
  switch (host) {
    case proto::INT32:
      return proto::INT8;
    case proto::UINT16:
      return proto::INT16;
    default:
      return proto::FLOAT8_E4M3;
  }
}

// x (input) -> dma_copy -> y (output), both in HBM, of `shape` and
// `dtype`, walked as one flat run of elements.
proto::Graph CopyGraph(const std::vector<int64_t>& shape, proto::DType dtype,
                       int64_t elements) {
  proto::Graph graph;
  graph.set_schema_version(proto::SCHEMA_VERSION_CURRENT);
  graph.set_kernel_name("npy_copy");
  proto::World* world = graph.mutable_world();
  world->set_target(proto::TARGET_TRN2);
  world->set_num_ranks(1);
  world->set_num_cores(1);
  const int64_t bytes = elements * DTypeSize(dtype);
  for (int i = 0; i < 2; ++i) {
    proto::Tensor* t = graph.add_tensors();
    t->set_id(i + 1);
    t->set_name(i == 0 ? "x" : "y");
    t->set_space(proto::HBM);
    t->set_dtype(dtype);
    for (int64_t d : shape) t->add_shape(d);
    t->set_address(i == 0 ? 0 : (bytes + 63) / 64 * 64);
    t->set_role(i == 0 ? proto::ROLE_INPUT : proto::ROLE_OUTPUT);
  }
  proto::Instruction* copy = graph.add_streams()->add_instructions();
  copy->set_opcode(proto::DMA_COPY);
  for (uint32_t id : {2u, 1u}) {
    proto::AccessPattern* ap = copy->add_operands();
    ap->set_tensor_id(id);
    ap->add_pattern(1);
    ap->add_pattern(elements);
  }
  graph.add_files("fuzz/npy_target.cc");
  graph.add_scopes("");
  return graph;
}

// Loads `array` into the copy graph of `dtype` and reads it back; with
// `exact`, the output must be the input bit for bit.
Outcome LoadAndCopy(HostArray array, proto::DType dtype, bool exact) {
  const int64_t elements = array.num_elements();
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(CopyGraph(array.shape, dtype, elements),
                                  FuzzRunOptions());
  if (!created.ok()) {
    // Some shapes (rank 0, many dims) are not tensor shapes: load the
    // same values flat.
    array.shape = {elements};
    created = interp::Interpreter::Create(
        CopyGraph(array.shape, dtype, elements), FuzzRunOptions());
  }
  Require(created.ok(), absl::StrCat("the flat copy graph is refused: ",
                                     created.status().ToString()));
  interp::Interpreter& interp = **created;
  array.name = std::string("x");
  if (absl::Status set = interp.SetInput(array); !set.ok()) {
    Require(!exact, absl::StrCat("an array refused by its own dtype: ",
                                 set.ToString()));
    RequireDiagnosed(set, "SetInput");
    return Outcome::kRefused;
  }
  absl::Status ran = interp.Run();
  Require(ran.ok(), absl::StrCat("a copy failed: ", ran.ToString()));
  absl::StatusOr<HostArray> out =
      interp.GetOutput("y", array.dtype == proto::UINT16
                                ? interp::Interpreter::HostForm::kRawBits16
                                : interp::Interpreter::HostForm::kValues);
  Require(out.ok(), "the copy's output is unreadable");
  if (exact) {
    out->name = array.name;
    Require(SameBits(*out, array), "a copy changed the array's bits");
  }
  return Outcome::kDone;
}

}  // namespace

Outcome FuzzNpyFile(absl::string_view bytes) {
  absl::StatusOr<HostArray> array = ParseNpy(bytes, "fuzz.npy");
  if (!array.ok()) {
    Require(!array.status().message().empty(), "an npy error without text");
    return Outcome::kUnreadable;
  }
  Require(array->dtype == proto::FLOAT32 || array->dtype == proto::INT32 ||
              array->dtype == proto::UINT16,
          "ParseNpy returned an unexpected dtype");
  Require(static_cast<int64_t>(array->values()) == array->num_elements(),
          "ParseNpy's values do not match its shape");
  absl::StatusOr<std::string> written = SerializeNpy(*array);
  Require(written.ok(), "a parsed array does not serialize");
  absl::StatusOr<HostArray> reread = ParseNpy(*written, "rewritten.npy");
  Require(reread.ok(), "SerializeNpy wrote what ParseNpy refuses");
  Require(SameBits(*reread, *array), "an array changed on the way back");

  const int64_t elements = array->num_elements();
  if (elements < 1 || elements > kMaxRunElements) return Outcome::kTooBig;
  const bool exact = Fingerprint(bytes) % 2 == 0;
  const proto::DType host = array->dtype;
  return LoadAndCopy(*std::move(array),
                     exact ? ExactDType(host) : LossyDType(host), exact);
}

}  // namespace nkigraph::fuzz
