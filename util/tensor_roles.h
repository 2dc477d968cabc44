#ifndef NKIGRAPH_UTIL_TENSOR_ROLES_H_
#define NKIGRAPH_UTIL_TENSOR_ROLES_H_

// How the host sees a graph's tensor: given as an input, read back as an
// output, and by which name. An in-place tensor (ROLE_INPUT_OUTPUT) is
// both: given under its own name and read back under its output name
// (cross_entropy_backward's `logits`, read back as `grad_logits`). Every
// path that moves host data (run, replay, verify, the processes of one
// run, Python) asks here, so no path reads an output by its input name.

#include <string>

#include "proto/nkigraph.pb.h"

namespace nkigraph {

inline bool IsHostInput(const proto::Tensor& t) {
  return t.role() == proto::ROLE_INPUT || t.role() == proto::ROLE_INPUT_OUTPUT;
}

inline bool IsHostOutput(const proto::Tensor& t) {
  return t.role() == proto::ROLE_OUTPUT || t.role() == proto::ROLE_INPUT_OUTPUT;
}

// The name an output is read back by (and its .npy file is named after).
inline const std::string& HostOutputName(const proto::Tensor& t) {
  return t.role() == proto::ROLE_INPUT_OUTPUT ? t.output_name() : t.name();
}

}  // namespace nkigraph

#endif  // NKIGRAPH_UTIL_TENSOR_ROLES_H_
