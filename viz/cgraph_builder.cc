#include "viz/cgraph_builder.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace nkigraph::viz {
namespace {

// --- Id discipline: sequential ids for names ------------------------------

// Names are kept as cgraph's own reference-counted strings (agstrdup):
// cgraph asks of a name it prints whether it is an HTML string by reading
// the string's header, so a name that is not one of its strings makes it
// read memory that is not a header (and print `<name>` at random). The
// strings belong to the graph's string table and go with it.
struct IdState {
  explicit IdState(Agraph_t* graph) : graph(graph) {}
  Agraph_t* graph;
  absl::flat_hash_map<std::string, IDTYPE> ids;
  std::vector<char*> names;   // names[k] has id 2 * (k + 1)
  IDTYPE next_anonymous = 1;  // odd ids, as cgraph's own discipline
};

void* IdOpen(Agraph_t* graph, Agdisc_t*) { return new IdState(graph); }

long IdMap(void* state, int, char* name, IDTYPE* id, int create) {
  IdState& s = *static_cast<IdState*>(state);
  if (name == nullptr) {
    *id = s.next_anonymous;
    s.next_anonymous += 2;
    return 1;
  }
  auto it = s.ids.find(name);
  if (it != s.ids.end()) {
    *id = it->second;
    return 1;
  }
  if (!create) return 0;
  s.names.push_back(agstrdup(s.graph, name));
  *id = 2 * static_cast<IDTYPE>(s.names.size());
  s.ids.emplace(name, *id);
  return 1;
}

long IdAlloc(void*, int, IDTYPE) { return 0; }
void IdFree(void*, int, IDTYPE) {}

char* IdPrint(void* state, int, IDTYPE id) {
  IdState& s = *static_cast<IdState*>(state);
  if (id % 2 != 0 || id == 0 || id / 2 > s.names.size()) return nullptr;
  return s.names[id / 2 - 1];
}

void IdClose(void* state) { delete static_cast<IdState*>(state); }
void IdRegister(void*, int, void*) {}

Agiddisc_t kIdDisc = {IdOpen,  IdMap,   IdAlloc,   IdFree,
                      IdPrint, IdClose, IdRegister};

// --- IO discipline: agwrite into a std::string ----------------------------

int IoRead(void*, char*, int) { return 0; }
int IoPut(void* chan, const char* text) {
  static_cast<std::string*>(chan)->append(text);
  return 0;
}
int IoFlush(void*) { return 0; }

Agiodisc_t kIoDisc = {IoRead, IoPut, IoFlush};
Agdisc_t kDisc = {&AgMemDisc, &kIdDisc, &kIoDisc};

char* C(const std::string& text) { return const_cast<char*>(text.c_str()); }

void Set(void* object, const std::string& key, const std::string& value) {
  agsafeset(object, C(key), C(value), const_cast<char*>(""));
}

}  // namespace

std::mutex& GraphvizMutex() {
  static std::mutex* mutex = new std::mutex();
  return *mutex;
}

void AgraphCloser::operator()(Agraph_t* graph) const {
  if (graph != nullptr) agclose(graph);
}

AgraphPtr BuildAgraph(const VizGraph& viz) {
  AgraphPtr graph(agopen(C(viz.name), Agdirected, &kDisc));
  Agraph_t* g = graph.get();
  // Graph attributes default to "" so clusters do not inherit the root's
  // label; node and edge defaults apply everywhere.
  for (const auto& [key, value] : viz.graph_attrs) {
    agattr(g, AGRAPH, C(key), const_cast<char*>(""));
    agset(g, C(key), C(value));
  }
  for (const auto& [key, value] : viz.node_defaults) {
    agattr(g, AGNODE, C(key), C(value));
  }
  for (const auto& [key, value] : viz.edge_defaults) {
    agattr(g, AGEDGE, C(key), C(value));
  }

  std::vector<Agraph_t*> clusters;
  clusters.reserve(viz.clusters.size());
  for (const VizCluster& cluster : viz.clusters) {
    Agraph_t* parent = cluster.parent < 0 ? g : clusters[cluster.parent];
    Agraph_t* sub = agsubg(parent, C(cluster.name), 1);
    for (const auto& [key, value] : cluster.attrs) Set(sub, key, value);
    clusters.push_back(sub);
  }

  std::vector<Agnode_t*> nodes;
  nodes.reserve(viz.nodes.size());
  for (const VizNode& node : viz.nodes) {
    Agraph_t* owner = node.cluster < 0 ? g : clusters[node.cluster];
    Agnode_t* n = agnode(owner, C(node.name), 1);
    for (const auto& [key, value] : node.attrs) {
      if (node.html_label && key == "label") {
        char* html = agstrdup_html(g, C(value));
        agsafeset(n, const_cast<char*>("label"), html, const_cast<char*>(""));
        agstrfree(g, html);
      } else {
        Set(n, key, value);
      }
    }
    nodes.push_back(n);
  }

  for (const VizEdge& edge : viz.edges) {
    Agedge_t* e = agedge(g, nodes[edge.tail], nodes[edge.head], nullptr, 1);
    for (const auto& [key, value] : edge.attrs) Set(e, key, value);
  }

  for (size_t k = 0; k < viz.same_rank.size(); ++k) {
    const std::string name = "rank_" + std::to_string(k);
    Agraph_t* sub = agsubg(g, C(name), 1);
    Set(sub, "rank", "same");
    for (int n : viz.same_rank[k]) agsubnode(sub, nodes[n], 1);
  }
  return graph;
}

std::string WriteDot(Agraph_t* graph) {
  std::string out;
  agwrite(graph, &out);
  return out;
}

}  // namespace nkigraph::viz
