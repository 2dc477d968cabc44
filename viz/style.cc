#include "viz/style.h"

#include "absl/strings/str_cat.h"
#include "graph/graph_index.h"

namespace nkigraph::viz {
namespace {

constexpr EdgeKind kEdgeKinds[] = {EdgeKind::kRaw,        EdgeKind::kWar,
                                   EdgeKind::kWaw,        EdgeKind::kOrder,
                                   EdgeKind::kBarrier,    EdgeKind::kSendRecv,
                                   EdgeKind::kCollective, EdgeKind::kPermute};

absl::string_view EdgeKindMeaning(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kRaw:
      return "read after write (data)";
    case EdgeKind::kWar:
      return "write after read";
    case EdgeKind::kWaw:
      return "write after write";
    case EdgeKind::kOrder:
      return "program order";
    case EdgeKind::kBarrier:
      return "core_barrier";
    case EdgeKind::kSendRecv:
      return "sendrecv pair";
    case EdgeKind::kCollective:
      return "collective";
    case EdgeKind::kPermute:
      return "ring permute step";
  }
  return "";
}

// A short line drawn in the legend for an edge kind.
absl::string_view EdgeKindGlyph(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kRaw:
      return "&#8212;&#8212;&#9654;";
    case EdgeKind::kWar:
      return "- - - &#9655;";
    case EdgeKind::kWaw:
      return "&#183; &#183; &#183; &#9655;";
    case EdgeKind::kOrder:
      return "&#8212;&#8212;&#9656;";
    case EdgeKind::kBarrier:
    case EdgeKind::kCollective:
      return "&#9473;&#9473;&#9473;";
    case EdgeKind::kSendRecv:
      return "&#9664;&#9473;&#9654;";
    case EdgeKind::kPermute:
      return "&#9473;&#9473;&#9654;";
  }
  return "";
}

}  // namespace

absl::string_view EngineColor(ops::Engine engine) {
  switch (engine) {
    case ops::Engine::kTensor:
      return "#9ecae1";
    case ops::Engine::kVector:
      return "#a1d99b";
    case ops::Engine::kScalar:
      return "#fdd0a2";
    case ops::Engine::kGpSimd:
      return "#cbc9e2";
    case ops::Engine::kDma:
      return "#fff2ae";
    case ops::Engine::kSync:
      return "#fcbba1";
    case ops::Engine::kCollective:
      return "#f1b6da";
  }
  return "#ffffff";
}

absl::string_view EdgeKindName(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kRaw:
      return "raw";
    case EdgeKind::kWar:
      return "war";
    case EdgeKind::kWaw:
      return "waw";
    case EdgeKind::kOrder:
      return "order";
    case EdgeKind::kBarrier:
      return "barrier";
    case EdgeKind::kSendRecv:
      return "sendrecv";
    case EdgeKind::kCollective:
      return "collective";
    case EdgeKind::kPermute:
      return "permute";
  }
  return "";
}

absl::string_view EdgeColor(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::kRaw:
      return "#303030";
    case EdgeKind::kWar:
    case EdgeKind::kWaw:
      return "#909090";
    case EdgeKind::kOrder:
      return "#b0b0b0";
    case EdgeKind::kBarrier:
      return "#d62728";
    case EdgeKind::kSendRecv:
      return "#1f77b4";
    case EdgeKind::kCollective:
      return "#c51b7d";
    case EdgeKind::kPermute:
      return "#7b3294";
  }
  return "black";
}

Attrs EdgeStyle(EdgeKind kind) {
  Attrs attrs = {{"class", std::string(EdgeKindName(kind))},
                 {"color", std::string(EdgeColor(kind))},
                 {"fontcolor", std::string(EdgeColor(kind))}};
  switch (kind) {
    case EdgeKind::kRaw:
      break;
    case EdgeKind::kWar:
      attrs.push_back({"style", "dashed"});
      attrs.push_back({"arrowhead", "empty"});
      break;
    case EdgeKind::kWaw:
      attrs.push_back({"style", "dotted"});
      attrs.push_back({"arrowhead", "empty"});
      break;
    case EdgeKind::kOrder:
      attrs.push_back({"arrowsize", "0.5"});
      break;
    case EdgeKind::kBarrier:
    case EdgeKind::kCollective:
      attrs.push_back({"penwidth", "3"});
      attrs.push_back({"dir", "none"});
      break;
    case EdgeKind::kSendRecv:
      attrs.push_back({"penwidth", "2"});
      attrs.push_back({"dir", "both"});
      break;
    case EdgeKind::kPermute:
      attrs.push_back({"penwidth", "2"});
      break;
  }
  return attrs;
}

void ApplyDefaults(VizGraph& graph) {
  graph.graph_attrs.insert(graph.graph_attrs.begin(),
                           {{"rankdir", "LR"},
                            {"fontname", "Helvetica"},
                            {"fontsize", "12"},
                            {"labelloc", "t"},
                            {"labeljust", "l"},
                            {"nodesep", "0.18"},
                            {"ranksep", "0.35"},
                            {"outputorder", "edgesfirst"}});
  graph.node_defaults = {{"shape", "box"},          {"style", "filled,rounded"},
                         {"fontname", "Helvetica"}, {"fontsize", "10"},
                         {"margin", "0.06,0.03"},   {"height", "0.3"},
                         {"penwidth", "0.8"}};
  graph.edge_defaults = {
      {"fontname", "Helvetica"}, {"fontsize", "8"}, {"arrowsize", "0.6"}};
}

VizNode LegendNode(unsigned engines, unsigned edges) {
  std::string html =
      "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"1\" "
      "CELLPADDING=\"2\"><TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><B>legend"
      "</B></TD></TR>";
  for (ops::Engine engine : graph::kAllEngines) {
    if ((engines >> static_cast<int>(engine) & 1u) == 0) continue;
    absl::StrAppend(&html, "<TR><TD BGCOLOR=\"", EngineColor(engine),
                    "\" BORDER=\"1\" WIDTH=\"24\"></TD><TD ALIGN=\"LEFT\">",
                    ops::EngineName(engine), " engine</TD></TR>");
  }
  for (EdgeKind kind : kEdgeKinds) {
    if ((edges >> static_cast<int>(kind) & 1u) == 0) continue;
    absl::StrAppend(&html, "<TR><TD><FONT COLOR=\"", EdgeColor(kind), "\">",
                    EdgeKindGlyph(kind), "</FONT></TD><TD ALIGN=\"LEFT\">",
                    EdgeKindMeaning(kind), "</TD></TR>");
  }
  html += "</TABLE>";
  VizNode node;
  node.name = "legend";
  node.role = NodeRole::kLegend;
  node.html_label = true;
  node.attrs = {{"label", html},
                {"shape", "plaintext"},
                {"style", "solid"},
                {"class", "legend"},
                {"fontsize", "9"}};
  return node;
}

}  // namespace nkigraph::viz
