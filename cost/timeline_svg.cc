#include "cost/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "ops/instr_facts.h"

namespace nkigraph::cost {
namespace {

constexpr double kLeft = 120;    // label column
constexpr double kWidth = 1100;  // plot width
constexpr double kRow = 14;
constexpr double kBand = 18;

const char* EngineColor(int lane) {
  if (lane >= kFirstDmaLane) return "#4e9a06";
  switch (static_cast<ops::Engine>(lane)) {
    case ops::Engine::kTensor:
      return "#cc0000";
    case ops::Engine::kVector:
      return "#3465a4";
    case ops::Engine::kScalar:
      return "#f57900";
    case ops::Engine::kGpSimd:
      return "#75507b";
    case ops::Engine::kCollective:
      return "#c4a000";
    default:
      return "#555753";
  }
}

std::string Escape(const std::string& text) {
  return absl::StrReplaceAll(
      text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

// A tick step of 1, 2 or 5 x 10^k microseconds giving about 10 ticks.
double TickStep(double span_us) {
  if (span_us <= 0) return 1;
  const double raw = span_us / 10;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

}  // namespace

absl::Status WriteTimelineSvg(const Schedule& s, const Report& report,
                              std::ostream& out) {
  const graph::GraphIndex& index = *s.index;
  const int cores = index.num_cores();
  const double span = std::max(s.makespan_ns, 1.0);
  const double scale = kWidth / span;  // px per ns
  std::vector<std::set<int>> used(cores);
  for (int i = 0; i < index.size(); ++i) {
    used[index.info(i).core].insert(s.slots[i].lane);
  }
  // The band level: the shallowest scope path with more than one instance
  // on a core (ring steps, layers, blocks), else the first path.
  std::map<std::string, int> instances;
  for (const ScopeInstance& inst : report.scopes) {
    ++instances[report.scope_paths[inst.path]];
  }
  std::string band_path;
  int band_depth = -1;
  for (const auto& [path, count] : instances) {
    const int depth =
        static_cast<int>(std::count(path.begin(), path.end(), '/'));
    if (count > cores && (band_depth < 0 || depth < band_depth)) {
      band_depth = depth;
      band_path = path;
    }
  }
  if (band_depth < 0 && !instances.empty())
    band_path = instances.begin()->first;

  // The bar's scope by its last component (the legend gives the path).
  // (npos + 1 is 0: a path without '/' is its own name.)
  const std::string band_name = band_path.substr(band_path.rfind('/') + 1);

  double height = 52;
  for (int core = 0; core < cores; ++core) {
    height += kBand + kRow * used[core].size() + 10;
  }
  height += 30;
  out << absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" font-family=\"sans-serif\" font-size=\"10\">\n",
      kLeft + kWidth + 20, height);
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << absl::StrFormat(
      "<text x=\"%.0f\" y=\"16\" font-size=\"13\">%s on %s: estimated "
      "%.3f us (cost model, not a measurement)</text>\n",
      kLeft, Escape(report.kernel), Escape(report.target),
      s.makespan_ns / 1000.0);
  if (!band_path.empty()) {
    out << absl::StrFormat(
        "<text x=\"%.0f\" y=\"30\">scope bar: instances of %s (grey "
        "bands, numbered in program order; hover for the path)</text>\n",
        kLeft, Escape(band_path));
  }
  double y = 42;
  for (int core = 0; core < cores; ++core) {
    out << absl::StrFormat(
        "<text x=\"4\" y=\"%.1f\" font-weight=\"bold\">"
        "core %d</text>\n",
        y + 12, core);
    // Scope band.
    int shade = 0;
    for (const ScopeInstance& inst : report.scopes) {
      if (inst.core != core || report.scope_paths[inst.path] != band_path) {
        continue;
      }
      const double x0 = kLeft + inst.start_ns * scale;
      const double w = std::max((inst.end_ns - inst.start_ns) * scale, 0.5);
      const bool odd = shade++ % 2 == 1;
      const double row_y = y + (odd ? (kBand - 4) / 2 : 0);
      out << absl::StrFormat(
          "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
          "fill=\"%s\"><title>%s #%d</title></rect>\n",
          x0, row_y, w, (kBand - 4) / 2, odd ? "#d3d7cf" : "#babdb6",
          Escape(report.scope_paths[inst.path]), inst.instance);
      // The scope's name where the bar has room for it, else its number
      // (the legend under the title names the bar's scope).
      const std::string name = absl::StrCat(band_name, " #", inst.instance);
      const std::string label = w > 3.8 * static_cast<double>(name.size()) + 4
                                    ? name
                                    : absl::StrCat(inst.instance);
      if (w > 4.0 * static_cast<double>(label.size()) + 2) {
        out << absl::StrFormat(
            "<text x=\"%.2f\" y=\"%.1f\" font-size=\"7\">%s</text>\n", x0 + 2,
            row_y + 6, Escape(label));
      }
    }
    y += kBand;
    std::map<int, double> lane_y;
    for (int lane : used[core]) {
      lane_y[lane] = y;
      out << absl::StrFormat("<text x=\"14\" y=\"%.1f\">%s</text>\n", y + 10,
                             LaneName(lane));
      y += kRow;
    }
    // Boxes, lane by lane, merging sub-pixel neighbours.
    for (int lane : used[core]) {
      double cur0 = -1, cur1 = -1;
      int merged = 0, first = -1;
      auto flush = [&]() {
        if (cur0 < 0) return;
        const proto::Instruction& instr = index.instr(first);
        const std::string title =
            merged == 1
                ? absl::StrCat(ops::OpcodeName(instr.opcode()), " #",
                               instr.id(), " ", index.scope_path(instr.scope()))
                : absl::StrCat(merged, " instructions from #", instr.id());
        out << absl::StrFormat(
            "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
            "fill=\"%s\"><title>%s</title></rect>\n",
            kLeft + cur0, lane_y[lane] + 1, std::max(cur1 - cur0, 0.3),
            kRow - 3, EngineColor(lane), Escape(title));
      };
      for (int i : index.stream(core)) {
        const Slot& slot = s.slots[i];
        if (slot.lane != lane) continue;
        const double x0 = slot.start_ns * scale, x1 = slot.end_ns * scale;
        if (cur0 >= 0 && x0 - cur1 < 0.5 &&
            (x1 - x0 < 0.5 || cur1 - cur0 < 0.5)) {
          cur1 = std::max(cur1, x1);
          ++merged;
          continue;
        }
        flush();
        cur0 = x0;
        cur1 = x1;
        merged = 1;
        first = i;
      }
      flush();
    }
    y += 10;
  }
  // Time axis.
  const double span_us = span / 1000.0;
  const double step = TickStep(span_us);
  out << absl::StrFormat(
      "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
      "stroke=\"black\"/>\n",
      kLeft, y, kLeft + kWidth, y);
  for (double t = 0; t <= span_us + 1e-9; t += step) {
    const double x = kLeft + t * 1000.0 * scale;
    out << absl::StrFormat(
        "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
        "stroke=\"black\"/><text x=\"%.2f\" y=\"%.1f\" "
        "text-anchor=\"middle\">%g</text>\n",
        x, y, x, y + 4, x, y + 15, t);
  }
  out << absl::StrFormat(
      "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">us</text>\n",
      kLeft + kWidth, y + 26);
  out << "</svg>\n";
  if (!out) return absl::DataLossError("writing the picture failed");
  return absl::OkStatus();
}

}  // namespace nkigraph::cost
