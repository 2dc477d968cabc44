#ifndef NKIGRAPH_DIFF_MODEL_H_
#define NKIGRAPH_DIFF_MODEL_H_

// The normalised, id-free view of two graphs that the diff compares.
// Instructions refer to tensors by id, and ids differ between any two
// traces as soon as one tensor is added; so an instruction is compared by
// content: its opcode, attributes and operands, each operand's tensor
// named by (name, space, dtype, shape) rather than by id. Every compared
// thing is encoded to bytes and interned into a KeyTable shared by both
// graphs, so equal content means equal integer keys on either side.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::diff {

// Interns byte strings to dense integer keys (from 1).
class KeyTable {
 public:
  uint32_t Intern(absl::string_view bytes);
  size_t size() const { return ids_.size(); }

 private:
  absl::flat_hash_map<std::string, uint32_t> ids_;
};

// Appends fixed-width values and length-prefixed strings to a key.
void PutInt(std::string* key, int64_t value);
void PutString(std::string* key, absl::string_view text);

// One graph, with its tensor table checked and every stream's
// instructions reduced to keys.
struct GraphModel {
  const proto::Graph* graph = nullptr;
  // Key of (name, space, dtype, shape) by tensor index.
  std::vector<uint32_t> tensor_keys;
  // streams[s][i]: key of instruction i of graph->streams(s).
  std::vector<std::vector<uint32_t>> stream_keys;

  // The tensor with this id, or nullptr (0 or out of range).
  const proto::Tensor* FindTensor(uint32_t id) const;
};

// Builds the model of `graph` (`label` names it in errors: "A", "B").
// With `strict`, an instruction's key also holds its source file, line
// and scope path. Fails on a tensor table not indexed by id, on operands
// naming tensors the graph lacks, and on two streams for one core.
absl::StatusOr<GraphModel> BuildModel(const proto::Graph& graph,
                                      absl::string_view label, bool strict,
                                      KeyTable& keys);

}  // namespace nkigraph::diff

#endif  // NKIGRAPH_DIFF_MODEL_H_
