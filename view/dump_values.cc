#include "view/dump_values.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <regex>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "util/file_io.h"
#include "util/npy.h"

namespace nkigraph::view {
namespace {

using nlohmann::json;

struct DumpFile {
  std::string path;
  std::string name;  // the file name
  std::string tensor;
  int64_t sequence = 0;
  uint32_t instr = 0;
  int64_t rank = 0;
  int64_t core = 0;
  bool has_rank = false;  // the name has a _r<rank> part
  bool has_core = false;
};

double Value(const HostArray& array, int64_t k) {
  switch (array.dtype) {
    case proto::INT32:
      return array.i32[k];
    case proto::UINT16:
      return array.u16[k];
    default:
      return array.f32[k];
  }
}

// Shape, dtype, statistics and a heat-map of `array`.
json Summary(const HostArray& array, const DumpFile& file) {
  const int64_t n = static_cast<int64_t>(array.values());
  int64_t nan = 0, inf = 0, finite = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo, sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double v = Value(array, k);
    if (std::isnan(v)) {
      ++nan;
    } else if (std::isinf(v)) {
      ++inf;
    } else {
      ++finite;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
  }
  json out = {{"tensor", file.tensor},
              {"file", file.name},
              {"shape", array.shape},
              {"dtype", array.dtype == proto::INT32    ? "int32"
                        : array.dtype == proto::UINT16 ? "uint16 (raw bits)"
                                                       : "float32"},
              {"nan", nan},
              {"inf", inf}};
  if (finite > 0) {
    out["min"] = lo;
    out["max"] = hi;
    out["mean"] = sum / static_cast<double>(finite);
  }
  // The slice: the last two dims (one dim: a single row), at index 0 of
  // the others, averaged over blocks down to kHeatCells per side.
  const size_t dims = array.shape.size();
  const int64_t cols = dims >= 1 ? array.shape[dims - 1] : 1;
  const int64_t rows = dims >= 2 ? array.shape[dims - 2] : 1;
  if (n == 0 || rows <= 0 || cols <= 0 || rows * cols > n) return out;
  const int64_t out_rows = std::min<int64_t>(rows, kHeatCells);
  const int64_t out_cols = std::min<int64_t>(cols, kHeatCells);
  std::vector<double> cells;
  cells.reserve(out_rows * out_cols);
  for (int64_t r = 0; r < out_rows; ++r) {
    const int64_t r0 = r * rows / out_rows, r1 = (r + 1) * rows / out_rows;
    for (int64_t c = 0; c < out_cols; ++c) {
      const int64_t c0 = c * cols / out_cols, c1 = (c + 1) * cols / out_cols;
      double cell = 0;
      int64_t count = 0;
      for (int64_t y = r0; y < r1; ++y) {
        for (int64_t x = c0; x < c1; ++x) {
          const double v = Value(array, y * cols + x);
          if (std::isfinite(v)) {
            cell += v;
            ++count;
          }
        }
      }
      // A block with no finite value is null: the page draws it apart.
      cells.push_back(count > 0 ? cell / static_cast<double>(count)
                                : std::numeric_limits<double>::quiet_NaN());
    }
  }
  json heat_cells = json::array();
  for (double cell : cells) {
    heat_cells.push_back(std::isnan(cell) ? json(nullptr)
                                          : json(static_cast<float>(cell)));
  }
  out["heat"] = {{"rows", out_rows},
                 {"cols", out_cols},
                 {"of", {rows, cols}},
                 {"cells", std::move(heat_cells)}};
  return out;
}

}  // namespace

absl::StatusOr<json> DumpValues(const graph::GraphIndex& index,
                                const std::string& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat("--dump '", dir, "' is not a folder"));
  }
  const proto::World& world = index.graph().world();
  // The names `run --dump` gives; the rank and core parts are checked
  // against this graph's world below.
  const std::regex pattern(
      "^([0-9]+)_(.*)_i([0-9]+)(_r([0-9]+))?(_c([0-9]+))?\\.npy$");
  std::vector<DumpFile> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (!std::regex_match(name, match, pattern)) continue;
    DumpFile file;
    file.path = entry.path().string();
    file.name = name;
    file.tensor = match[2];
    file.has_rank = match[4].length() > 0;
    file.has_core = match[6].length() > 0;
    if (!absl::SimpleAtoi(match[1].str(), &file.sequence) ||
        !absl::SimpleAtoi(match[3].str(), &file.instr) ||
        (match[5].length() > 0 &&
         !absl::SimpleAtoi(match[5].str(), &file.rank)) ||
        (match[7].length() > 0 &&
         !absl::SimpleAtoi(match[7].str(), &file.core))) {
      continue;
    }
    files.push_back(std::move(file));
  }
  if (error) {
    return absl::NotFoundError(
        absl::StrCat("cannot read --dump '", dir, "': ", error.message()));
  }
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("--dump '", dir,
                     "' holds no `nkigraph run --dump` files "
                     "(<seq>_<tensor>_i<instr>[_r<rank>][_c<core>].npy)"));
  }
  std::sort(files.begin(), files.end(),
            [](const DumpFile& a, const DumpFile& b) {
              return a.sequence < b.sequence;
            });
  int64_t first_rank = std::numeric_limits<int64_t>::max();
  for (const DumpFile& file : files) {
    first_rank = std::min(first_rank, file.rank);
  }
  json by_instr = json::object();
  for (const DumpFile& file : files) {
    const int i = index.Find(file.instr);
    const auto not_ours = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dump '", dir, "' is not from this graph: ", file.name, " ", why));
    };
    if (i < 0) {
      return not_ours(absl::StrCat("names instruction ", file.instr,
                                   ", which the graph does not have"));
    }
    // `run --dump` names the rank and core exactly when the graph has
    // more than one.
    if (file.has_rank != (world.num_ranks() > 1) ||
        file.rank >= world.num_ranks()) {
      return not_ours(
          absl::StrCat("is named for ", file.has_rank ? "a rank" : "one rank",
                       "; the graph has ", world.num_ranks(), " rank(s)"));
    }
    if (file.has_core != (world.num_cores() > 1) ||
        file.core != index.info(i).core) {
      return not_ours(absl::StrCat("names core ", file.core,
                                   " for instruction ", file.instr,
                                   ", which runs on core ", index.info(i).core,
                                   " of ", world.num_cores()));
    }
    // The tensor the file names, among those the instruction writes.
    const graph::InstrInfo& info = index.info(i);
    const proto::Tensor* written = nullptr;
    std::string names;
    for (int o = 0; o < info.instr->operands_size(); ++o) {
      const uint32_t t = info.instr->operands(o).tensor_id();
      if (t == 0 || !info.Writes(o)) continue;
      const proto::Tensor& tensor = index.tensor(t);
      absl::StrAppend(&names, names.empty() ? "" : ", ", tensor.name());
      if (SafeFileName(tensor.name()) == file.tensor) written = &tensor;
    }
    if (written == nullptr) {
      return not_ours(absl::StrCat(
          "names tensor '", file.tensor, "' for instruction ", file.instr,
          ", which writes ", names.empty() ? "nothing" : names));
    }
    if (file.rank != first_rank) continue;
    absl::StatusOr<HostArray> array = ReadNpy(file.path);
    if (!array.ok()) return array.status();
    int64_t elements = 1;
    for (int64_t d : written->shape()) elements *= d;
    if (array->num_elements() != elements) {
      return not_ours(absl::StrCat("holds ", array->num_elements(),
                                   " elements; tensor '", written->name(),
                                   "' has ", elements));
    }
    json summary = Summary(*array, file);
    summary["tensor"] = written->name();
    by_instr[std::to_string(i)].push_back(std::move(summary));
  }
  return json{{"dir", dir},
              {"files", files.size()},
              {"rank", first_rank},
              {"ranks", world.num_ranks()},
              {"by_instr", std::move(by_instr)}};
}

}  // namespace nkigraph::view
