// The semantic graph diff (diff/) and `nkigraph diff`.
#include "diff/diff.h"

#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "diff/align.h"
#include "diff/format.h"
#include "diff/json_writer.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "tests/cli_fixture.h"
#include "util/graph_io.h"

namespace nkigraph {
namespace {

using diff::Align;
using diff::Alignment;
using diff::ChangeKind;
using diff::DiffOptions;
using diff::DiffResult;
using diff::FieldChange;
using diff::InstrChange;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// --- Helpers ---------------------------------------------------------------

// tiled_matmul at m=600 k=300 n=200: some 40 instructions over 30 tensors,
// with repeated tile names; the base graph of most tests.
proto::Graph Matmul(const std::string& n = "200") {
  absl::StatusOr<proto::Graph> graph = kernels::KernelRegistry::Global().Trace(
      "tiled_matmul", {{"m", "600"}, {"k", "300"}, {"n", n}});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return graph.ok() ? *graph : proto::Graph();
}

DiffResult MustDiff(const proto::Graph& a, const proto::Graph& b,
                    DiffOptions options = {}) {
  absl::StatusOr<DiffResult> result = diff::Diff(a, b, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : DiffResult();
}

std::string Text(const DiffResult& result) {
  return diff::FormatText(result, {});
}

proto::Stream* Stream0(proto::Graph& graph) { return graph.mutable_streams(0); }

void InsertInstr(proto::Stream* stream, int pos,
                 const proto::Instruction& instr) {
  *stream->add_instructions() = instr;
  for (int k = stream->instructions_size() - 1; k > pos; --k) {
    stream->mutable_instructions()->SwapElements(k, k - 1);
  }
}

void RemoveInstr(proto::Stream* stream, int pos) {
  stream->mutable_instructions()->DeleteSubrange(pos, 1);
}

proto::Tensor* FindTensorNamed(proto::Graph& graph, const std::string& name) {
  for (proto::Tensor& tensor : *graph.mutable_tensors()) {
    if (tensor.name() == name) return &tensor;
  }
  ADD_FAILURE() << "no tensor " << name;
  return graph.mutable_tensors(0);
}

std::vector<std::string> FieldNames(const std::vector<FieldChange>& fields) {
  std::vector<std::string> names;
  for (const FieldChange& field : fields) names.push_back(field.field);
  return names;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Number of a[i] matched to b[j] by the alignment, after checking that the
// unmarked elements really pair up equal, in order.
int64_t CheckedMatches(absl::Span<const uint32_t> a,
                       absl::Span<const uint32_t> b,
                       const Alignment& alignment) {
  EXPECT_EQ(alignment.removed.size(), a.size());
  EXPECT_EQ(alignment.added.size(), b.size());
  std::vector<uint32_t> kept_a, kept_b;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!alignment.removed[i]) kept_a.push_back(a[i]);
  }
  for (size_t j = 0; j < b.size(); ++j) {
    if (!alignment.added[j]) kept_b.push_back(b[j]);
  }
  EXPECT_TRUE(kept_a == kept_b) << "matched elements differ";
  return static_cast<int64_t>(kept_a.size());
}

int64_t LcsLength(const std::vector<uint32_t>& a,
                  const std::vector<uint32_t>& b) {
  std::vector<std::vector<int64_t>> dp(a.size() + 1,
                                       std::vector<int64_t>(b.size() + 1));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      dp[i][j] = a[i - 1] == b[j - 1] ? dp[i - 1][j - 1] + 1
                                      : std::max(dp[i - 1][j], dp[i][j - 1]);
    }
  }
  return dp[a.size()][b.size()];
}

// A bound on the wall time of the long-input tests below. They take well
// under a second; a quadratic method takes hours. The bound only tells the
// two apart, with room for the sanitizers and a loaded machine.
constexpr double kLinearNotQuadraticSeconds = 60.0;

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

// --- A minimal JSON validator (RFC 8259 grammar), so the test does not
// trust the writer it checks. ----------------------------------------------

class JsonValidator {
 public:
  explicit JsonValidator(const std::string& text) : s_(text) {}
  bool Valid() {
    SkipSpace();
    if (!Value()) return false;
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r' || s_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool String() {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++pos_ >= s_.size()) return false;
        const char e = s_[pos_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            if (pos_ + k >= s_.size() || !isxdigit(s_[pos_ + k])) return false;
          }
          pos_ += 4;
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          return false;
        }
      }
      ++pos_;
    }
    return false;
  }
  bool Number() {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !isdigit(s_[pos_])) return false;
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && isdigit(s_[pos_])) ++pos_;
    }
    return pos_ > start;
  }
  bool Value() {
    SkipSpace();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return Container('}', true);
    if (c == '[') return Container(']', false);
    if (c == '"') return String();
    if (c == 't') return Literal("true");
    if (c == 'f') return Literal("false");
    if (c == 'n') return Literal("null");
    return Number();
  }
  bool Container(char close, bool object) {
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == close) {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (object) {
        if (!String()) return false;
        SkipSpace();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
      }
      if (!Value()) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == close) {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

bool PythonAvailable() {
  return std::system("python3 -c pass >/dev/null 2>&1") == 0;
}

// Whether python3's json module accepts `text`.
bool PythonParses(const std::string& text) {
  const testing::ScopedTempDir dir("diff_test_json");
  const std::string path = dir.Path("text.json");
  std::ofstream(path, std::ios::binary) << text;
  const std::string command = absl::StrCat(
      "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '", path,
      "' >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

// --- Alignment -------------------------------------------------------------

TEST(DiffAlignTest, IdenticalSequencesHaveNoEdits) {
  const std::vector<uint32_t> a = {1, 2, 3, 2, 1};
  const Alignment alignment = Align(a, a);
  EXPECT_EQ(CheckedMatches(a, a, alignment), 5);
  EXPECT_TRUE(diff::Hunks(alignment).empty());
}

TEST(DiffAlignTest, IsMinimalOnRandomSmallSequences) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::uniform_int_distribution<int> length(0, 40);
    std::uniform_int_distribution<uint32_t> symbol(0, round % 5 + 1);
    std::vector<uint32_t> a(length(rng)), b(length(rng));
    for (uint32_t& x : a) x = symbol(rng);
    for (uint32_t& x : b) x = symbol(rng);
    SCOPED_TRACE(round);
    EXPECT_EQ(CheckedMatches(a, b, Align(a, b)), LcsLength(a, b));
  }
}

TEST(DiffAlignTest, OneInsertionInARepetitiveStreamIsOneHunk) {
  // A loop body of 5 instructions repeated 1000 times, then one extra
  // instruction in the middle of iteration 500.
  std::vector<uint32_t> a;
  for (int i = 0; i < 1000; ++i) {
    for (uint32_t op : {1u, 2u, 3u, 4u, 5u}) a.push_back(op);
  }
  std::vector<uint32_t> b = a;
  b.insert(b.begin() + 2502, 9u);
  const Alignment alignment = Align(a, b);
  EXPECT_EQ(CheckedMatches(a, b, alignment), 5000);
  const std::vector<diff::Hunk> hunks = diff::Hunks(alignment);
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].a_begin, hunks[0].a_end);
  EXPECT_EQ(hunks[0].b_begin, 2502);
  EXPECT_EQ(hunks[0].b_end, 2503);
}

TEST(DiffAlignTest, StaysNearLinearOnLongStreamsWithSmallEdits) {
  // 2M keys with edits spread from start to end, so trimming the common
  // prefix and suffix does not help: O(N * D), not O(N^2).
  constexpr int kN = 2'000'000;
  std::vector<uint32_t> a(kN);
  for (int i = 0; i < kN; ++i) a[i] = static_cast<uint32_t>(i % 4096);
  std::vector<uint32_t> b = a;
  b[10] = 50000;                            // one change
  b.erase(b.begin() + 700'000);             // one removal
  b.insert(b.begin() + 1'999'000, 50001u);  // one insertion
  const auto start = std::chrono::steady_clock::now();
  const Alignment alignment = Align(a, b);
  const double seconds = Seconds(start);
  EXPECT_EQ(CheckedMatches(a, b, alignment), kN - 2);
  EXPECT_EQ(diff::Hunks(alignment).size(), 3u);
  EXPECT_LT(seconds, kLinearNotQuadraticSeconds);
}

TEST(DiffAlignTest, UnrelatedLongSequencesStayBoundedAndConsistent) {
  // Worst case for O(ND): nothing in common but the alphabet. The cost
  // bound keeps it near-linear; the result must still be a valid script.
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> symbol(0, 7);
  std::vector<uint32_t> a(100'000), b(100'000);
  for (uint32_t& x : a) x = symbol(rng);
  for (uint32_t& x : b) x = symbol(rng);
  const auto start = std::chrono::steady_clock::now();
  const Alignment alignment = Align(a, b);
  const double seconds = Seconds(start);
  const int64_t matches = CheckedMatches(a, b, alignment);
  // Random 8-letter strings share ~65% (their LCS); the bounded search
  // settles for ~50%.
  EXPECT_GT(matches, 40'000);
  EXPECT_LT(seconds, kLinearNotQuadraticSeconds);
}

// --- Graph diff ------------------------------------------------------------

TEST(DiffTest, IdenticalGraphsHaveNoDifferences) {
  const proto::Graph a = Matmul();
  const proto::Graph b = Matmul();
  const DiffResult result = MustDiff(a, b);
  EXPECT_TRUE(result.same());
  EXPECT_TRUE(result.header.empty());
  EXPECT_TRUE(result.tensors.empty());
  ASSERT_EQ(result.streams.size(), 1u);
  EXPECT_TRUE(result.streams[0].changes.empty());
  EXPECT_EQ(result.streams[0].length_a, a.streams(0).instructions_size());
  EXPECT_EQ(Text(result),
            "summary: no differences (0 added, 0 removed, 0 changed)\n");
  // Strict too: the same trace has the same source lines.
  EXPECT_TRUE(MustDiff(a, b, {.strict = true}).same());
}

TEST(DiffTest, ComparesByContentNotByIds) {
  // Renumber every instruction and list the tensors sorted by name (ids
  // follow positions, so nearly every id changes), remapping the
  // operands: the same program. Tensors of one name keep their order of
  // allocation, which the diff compares.
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  std::vector<proto::Tensor> tensors(a.tensors().begin(), a.tensors().end());
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const proto::Tensor& x, const proto::Tensor& y) {
                     return x.name() > y.name();
                   });
  std::vector<uint32_t> new_id(tensors.size() + 1);
  b.clear_tensors();
  for (const proto::Tensor& old : tensors) {
    proto::Tensor* tensor = b.add_tensors();
    *tensor = old;
    tensor->set_id(static_cast<uint32_t>(b.tensors_size()));
    new_id[old.id()] = tensor->id();
  }
  int moved = 0;
  for (int t = 0; t < b.tensors_size(); ++t) moved += new_id[t + 1] != t + 1u;
  EXPECT_GT(moved, b.tensors_size() / 2);
  for (proto::Instruction& instr : *Stream0(b)->mutable_instructions()) {
    instr.set_id(instr.id() + 1000);
    for (proto::AccessPattern& ap : *instr.mutable_operands()) {
      if (ap.tensor_id() != 0) ap.set_tensor_id(new_id[ap.tensor_id()]);
    }
  }
  const DiffResult result = MustDiff(a, b);
  EXPECT_TRUE(result.same()) << Text(result);
}

TEST(DiffTest, ReportsExactlyOneInsertedRemovedAndModifiedInstruction) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  // In B's numbering: instruction 30 modified (its first operand's
  // offset), a:20 removed, a new one inserted at b:10.
  proto::Instruction* modified = Stream0(b)->mutable_instructions(30);
  modified->mutable_operands(0)->set_offset(modified->operands(0).offset() + 1);
  RemoveInstr(Stream0(b), 20);
  proto::Instruction inserted = a.streams(0).instructions(5);
  proto::Attr* marker = inserted.add_attrs();
  marker->set_name("marker");
  marker->set_i(7);
  inserted.set_id(999);
  InsertInstr(Stream0(b), 10, inserted);

  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.instruction_counts.added, 1);
  EXPECT_EQ(result.instruction_counts.removed, 1);
  EXPECT_EQ(result.instruction_counts.changed, 1);
  EXPECT_TRUE(result.header.empty());
  EXPECT_TRUE(result.tensors.empty());
  ASSERT_EQ(result.streams.size(), 1u);
  const std::vector<InstrChange>& changes = result.streams[0].changes;
  ASSERT_EQ(changes.size(), 3u) << Text(result);

  EXPECT_EQ(changes[0].kind, ChangeKind::kAdded);
  EXPECT_EQ(changes[0].index_b, 10);
  EXPECT_EQ(changes[0].id_b, 999u);
  EXPECT_THAT(changes[0].text_b, HasSubstr("marker=7"));

  EXPECT_EQ(changes[1].kind, ChangeKind::kRemoved);
  EXPECT_EQ(changes[1].index_a, 20);
  EXPECT_EQ(changes[1].id_a, a.streams(0).instructions(20).id());

  EXPECT_EQ(changes[2].kind, ChangeKind::kChanged);
  EXPECT_EQ(changes[2].index_a, 30);
  EXPECT_EQ(changes[2].index_b, 30);  // +1 inserted, -1 removed before it
  ASSERT_EQ(changes[2].fields.size(), 1u);
  EXPECT_THAT(changes[2].fields[0].field,
              AllOf(StartsWith("operand "), EndsWith(" offset")));
  const int64_t offset = a.streams(0).instructions(30).operands(0).offset();
  EXPECT_EQ(changes[2].fields[0].before, absl::StrCat(offset));
  EXPECT_EQ(changes[2].fields[0].after, absl::StrCat(offset + 1));

  const std::string text = Text(result);
  EXPECT_THAT(text, HasSubstr("  + b:10 [id 999] "));
  EXPECT_THAT(text, HasSubstr("  - a:20 "));
  EXPECT_THAT(text, HasSubstr("  ~ a:30 b:30 "));
  EXPECT_THAT(Lines(text).back(),
              StartsWith("summary: 1 added, 1 removed, 1 changed "
                         "(instructions: 1 added, 1 removed, 1 changed;"));
}

TEST(DiffTest, ChangedInstructionListsEachDifferingFieldOnce) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  // The first nc_matmul: flip its accumulate attribute and narrow its
  // moving operand's access pattern.
  int index = -1;
  for (int i = 0; i < b.streams(0).instructions_size(); ++i) {
    if (b.streams(0).instructions(i).opcode() == proto::NC_MATMUL) {
      index = i;
      break;
    }
  }
  ASSERT_GE(index, 0);
  proto::Instruction* instr = Stream0(b)->mutable_instructions(index);
  proto::Attr* extra = instr->add_attrs();
  extra->set_name("zz_new");
  extra->set_s("x");
  instr->mutable_operands(2)->set_pattern(1, 64);

  const DiffResult result = MustDiff(a, b);
  ASSERT_EQ(result.instruction_counts.total(), 1) << Text(result);
  const InstrChange& change = result.streams[0].changes[0];
  EXPECT_EQ(change.opcode, "nc_matmul");
  EXPECT_THAT(FieldNames(change.fields),
              ElementsAre("operand moving ap", "attr zz_new"));
  EXPECT_EQ(change.fields[1].before, std::nullopt);
  EXPECT_EQ(change.fields[1].after, "'x'");
  EXPECT_THAT(Text(result), HasSubstr("      attr zz_new: (absent) -> 'x'"));
}

TEST(DiffTest, AttributeOrderDoesNotMatter) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::Graph c = a;
  for (proto::Graph* g : {&b, &c}) {
    proto::Instruction* instr = Stream0(*g)->mutable_instructions(0);
    proto::Attr* first = instr->add_attrs();
    first->set_name("p");
    first->set_i(1);
    proto::Attr* second = instr->add_attrs();
    second->set_name("q");
    second->set_i(2);
  }
  Stream0(c)->mutable_instructions(0)->mutable_attrs()->SwapElements(
      c.streams(0).instructions(0).attrs_size() - 1,
      c.streams(0).instructions(0).attrs_size() - 2);
  EXPECT_TRUE(MustDiff(b, c).same());
  EXPECT_EQ(MustDiff(a, b).instruction_counts.changed, 1);
}

TEST(DiffTest, TensorReshapeIsAChangedShape) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::Tensor* out = FindTensorNamed(b, "out");
  out->set_shape(1, 201);
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.tensor_counts.changed, 1);
  EXPECT_EQ(result.tensor_counts.added + result.tensor_counts.removed, 0);
  ASSERT_EQ(result.tensors.size(), 1u);
  EXPECT_EQ(result.tensors[0].name_a, "out");
  ASSERT_EQ(result.tensors[0].fields.size(), 1u);
  EXPECT_EQ(result.tensors[0].fields[0].field, "shape");
  EXPECT_EQ(result.tensors[0].fields[0].before, "[600, 200]");
  EXPECT_EQ(result.tensors[0].fields[0].after, "[600, 201]");
  // The stores into `out` now write a differently shaped tensor.
  EXPECT_GT(result.instruction_counts.changed, 0);
  for (const InstrChange& change : result.streams[0].changes) {
    EXPECT_EQ(change.kind, ChangeKind::kChanged);
    EXPECT_THAT(
        FieldNames(change.fields),
        ElementsAre(AllOf(StartsWith("operand "), EndsWith(" tensor"))));
  }
  EXPECT_THAT(Text(result), HasSubstr("      shape: [600, 200] -> [600, 201]"));
}

TEST(DiffTest, ChangedInputValueRangeIsATensorChange) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::ValueRange* range = FindTensorNamed(b, "lhs")->mutable_value_range();
  range->set_lo(-1);
  range->set_hi(6);
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.tensor_counts.changed, 1);
  ASSERT_EQ(result.tensors.size(), 1u);
  EXPECT_EQ(result.tensors[0].name_a, "lhs");
  ASSERT_EQ(result.tensors[0].fields.size(), 1u);
  EXPECT_EQ(result.tensors[0].fields[0].field, "value_range");
  EXPECT_EQ(result.tensors[0].fields[0].before, "");
  EXPECT_EQ(result.tensors[0].fields[0].after, "[-1, 6]");
}

TEST(DiffTest, TensorRenameIsReportedAsARename) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  FindTensorNamed(b, "lhs")->set_name("lhs_renamed");
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.tensor_counts.changed, 1);
  EXPECT_EQ(result.tensor_counts.added, 0);
  EXPECT_EQ(result.tensor_counts.removed, 0);
  ASSERT_EQ(result.tensors.size(), 1u);
  EXPECT_EQ(result.tensors[0].name_a, "lhs");
  EXPECT_EQ(result.tensors[0].name_b, "lhs_renamed");
  EXPECT_THAT(FieldNames(result.tensors[0].fields), ElementsAre("name"));
  EXPECT_THAT(Text(result), HasSubstr("  ~ lhs -> lhs_renamed  [id 1 -> 1]"));
}

TEST(DiffTest, RepeatedTileNamesAreAlignedNotShifted) {
  // Drop the second "rhs_tile" of B's table (and its uses): one tensor
  // removed, not every later rhs_tile reported as changed.
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  int seen = 0;
  uint32_t victim = 0;
  for (const proto::Tensor& tensor : b.tensors()) {
    if (tensor.name() == "rhs_tile" && ++seen == 2) victim = tensor.id();
  }
  ASSERT_NE(victim, 0u);
  // Keep ids dense: re-point later ids down by one.
  b.mutable_tensors()->DeleteSubrange(static_cast<int>(victim) - 1, 1);
  for (proto::Tensor& tensor : *b.mutable_tensors()) {
    if (tensor.id() > victim) tensor.set_id(tensor.id() - 1);
  }
  google::protobuf::RepeatedPtrField<proto::Instruction>& instrs =
      *Stream0(b)->mutable_instructions();
  int removed_instrs = 0;
  for (int i = instrs.size() - 1; i >= 0; --i) {
    bool uses = false;
    for (const proto::AccessPattern& ap : instrs.Get(i).operands()) {
      uses |= ap.tensor_id() == victim;
    }
    if (uses) {
      instrs.DeleteSubrange(i, 1);
      ++removed_instrs;
      continue;
    }
    for (proto::AccessPattern& ap : *instrs.Mutable(i)->mutable_operands()) {
      if (ap.tensor_id() > victim) ap.set_tensor_id(ap.tensor_id() - 1);
    }
  }
  ASSERT_GT(removed_instrs, 0);
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.tensor_counts.removed, 1) << Text(result);
  EXPECT_EQ(result.tensor_counts.added + result.tensor_counts.changed, 0);
  ASSERT_EQ(result.tensors.size(), 1u);
  EXPECT_EQ(result.tensors[0].name_a, "rhs_tile#1");
  EXPECT_EQ(result.instruction_counts.removed, removed_instrs);
  EXPECT_EQ(result.instruction_counts.added, 0);
  EXPECT_EQ(result.instruction_counts.changed, 0);
}

TEST(DiffTest, AddedTensorAndChangedAddressAreReported) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::Tensor* extra = b.add_tensors();
  extra->set_id(static_cast<uint32_t>(b.tensors_size()));
  extra->set_name("scratch");
  extra->set_space(proto::SBUF);
  extra->set_dtype(proto::FLOAT32);
  extra->add_shape(128);
  extra->add_shape(4);
  extra->set_address(4096);
  proto::Tensor* bias_col = FindTensorNamed(b, "bias_col");
  const int64_t address = bias_col->address();
  bias_col->set_address(address + 128);
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.tensor_counts.added, 1);
  EXPECT_EQ(result.tensor_counts.changed, 1);
  EXPECT_EQ(result.instruction_counts.total(), 0);
  const std::string text = Text(result);
  EXPECT_THAT(text, HasSubstr("  + scratch: sbuf float32 [128, 4] @4096"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("      address: ", address, " -> ",
                                           address + 128)));
}

TEST(DiffTest, ParametersAndWorldAreComparedFieldByField) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  b.mutable_world()->set_num_cores(2);
  b.mutable_params(0)->set_value("601");
  proto::Param* extra = b.add_params();
  extra->set_name("seed");
  extra->set_value("3");
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.header_counts.changed, 2);
  EXPECT_EQ(result.header_counts.added, 1);
  const std::string text = Text(result);
  EXPECT_THAT(text, HasSubstr("  ~ param m: 600 -> 601"));
  EXPECT_THAT(text, HasSubstr("  + param seed: 3"));
  EXPECT_THAT(text, HasSubstr("  ~ num_cores: 1 -> 2"));
}

TEST(DiffTest, StrictSeesSourceLineAndScopeChangesTheDefaultIgnores) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::Instruction* instr = Stream0(b)->mutable_instructions(7);
  instr->set_line(instr->line() + 100);
  const DiffResult relaxed = MustDiff(a, b);
  EXPECT_TRUE(relaxed.same()) << Text(relaxed);
  const DiffResult strict = MustDiff(a, b, {.strict = true});
  ASSERT_EQ(strict.instruction_counts.changed, 1) << Text(strict);
  EXPECT_EQ(strict.instruction_counts.total(), 1);
  const InstrChange& change = strict.streams[0].changes[0];
  EXPECT_EQ(change.index_a, 7);
  EXPECT_THAT(FieldNames(change.fields), ElementsAre("source"));
  EXPECT_THAT(*change.fields[0].after,
              EndsWith(absl::StrCat(":", instr->line())));

  proto::Graph c = a;
  c.add_scopes("elsewhere");
  Stream0(c)->mutable_instructions(3)->set_scope(
      static_cast<uint32_t>(c.scopes_size() - 1));
  EXPECT_TRUE(MustDiff(a, c).same());
  const DiffResult scoped = MustDiff(a, c, {.strict = true});
  ASSERT_EQ(scoped.instruction_counts.changed, 1);
  EXPECT_THAT(FieldNames(scoped.streams[0].changes[0].fields),
              ElementsAre("scope"));
}

TEST(DiffTest, StrictComparesFileNamesNotTableIndexes) {
  // The same instructions with the interned file table written in another
  // order (and a second, unused file) are the same under --strict.
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  b.clear_files();
  b.add_files("unused.cc");
  for (const std::string& file : a.files()) b.add_files(file);
  for (proto::Instruction& instr : *Stream0(b)->mutable_instructions()) {
    instr.set_file(instr.file() + 1);
  }
  const DiffResult result = MustDiff(a, b, {.strict = true});
  EXPECT_TRUE(result.same()) << Text(result);
}

TEST(DiffTest, StreamOnlyInOneGraphCountsItsInstructions) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  proto::Stream* second = b.add_streams();
  *second = a.streams(0);
  second->set_core(1);
  const DiffResult result = MustDiff(a, b);
  EXPECT_EQ(result.instruction_counts.added, a.streams(0).instructions_size());
  ASSERT_EQ(result.streams.size(), 2u);
  EXPECT_FALSE(result.streams[1].in_a);
  EXPECT_THAT(Text(result),
              HasSubstr(absl::StrCat("core 1: stream only in B, 0 -> ",
                                     a.streams(0).instructions_size())));
}

TEST(DiffTest, MaxChangesLimitsDetailNotCounts) {
  const proto::Graph a = Matmul("200");
  const proto::Graph b = Matmul("250");
  const DiffResult all = MustDiff(a, b);
  DiffOptions limited_options;
  limited_options.max_changes = 2;
  const DiffResult limited = MustDiff(a, b, limited_options);
  EXPECT_GT(all.streams[0].changes.size(), 2u);
  EXPECT_EQ(limited.streams[0].changes.size(), 2u);
  EXPECT_EQ(limited.streams[0].omitted,
            static_cast<int64_t>(all.streams[0].changes.size()) - 2);
  EXPECT_EQ(limited.total().total(), all.total().total());
  EXPECT_EQ(diff::SummaryLine(limited), diff::SummaryLine(all));
  EXPECT_THAT(Text(limited), HasSubstr("more instruction changes not shown"));
}

TEST(DiffTest, MalformedGraphsAreErrorsNotCrashes) {
  const proto::Graph a = Matmul();
  proto::Graph bad_ref = a;
  Stream0(bad_ref)->mutable_instructions(0)->mutable_operands(0)->set_tensor_id(
      9999);
  absl::StatusOr<DiffResult> r1 = diff::Diff(a, bad_ref, {});
  ASSERT_FALSE(r1.ok());
  EXPECT_THAT(r1.status().message(), HasSubstr("graph B"));
  EXPECT_THAT(r1.status().message(), HasSubstr("tensor 9999"));

  proto::Graph bad_ids = a;
  bad_ids.mutable_tensors(3)->set_id(77);
  EXPECT_FALSE(diff::Diff(bad_ids, a, {}).ok());

  proto::Graph two_streams = a;
  *two_streams.add_streams() = a.streams(0);
  EXPECT_FALSE(diff::Diff(a, two_streams, {}).ok());

  // Odd patterns, unknown opcodes and enum values still diff and print.
  proto::Graph odd = a;
  proto::Instruction* instr = Stream0(odd)->mutable_instructions(0);
  instr->set_opcode(static_cast<proto::Opcode>(99));
  instr->mutable_operands(0)->add_pattern(5);
  odd.mutable_tensors(0)->set_dtype(static_cast<proto::DType>(42));
  absl::StatusOr<DiffResult> r2 = diff::Diff(a, odd, {});
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_THAT(Text(*r2), HasSubstr("opcode_99"));
  EXPECT_TRUE(JsonValidator(diff::FormatJson(*r2, {})).Valid());
}

TEST(DiffTest, TextRoundTripGraphsDiffTheSame) {
  // What the golden tests rely on: a graph written as text and read back
  // is the same graph.
  const proto::Graph a = Matmul();
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(a, &text));
  proto::Graph b;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &b));
  EXPECT_TRUE(MustDiff(a, b, {.strict = true}).same());
}

TEST(DiffTest, LongGraphsWithFewEditsDiffQuickly) {
  // 200k instructions: the base graph's stream repeated (ids ignored).
  const proto::Graph base = Matmul();
  proto::Graph a = base;
  proto::Stream* stream = Stream0(a);
  while (stream->instructions_size() < 200'000) {
    for (const proto::Instruction& instr : base.streams(0).instructions()) {
      *stream->add_instructions() = instr;
    }
  }
  proto::Graph b = a;
  RemoveInstr(Stream0(b), 1000);
  Stream0(b)->mutable_instructions(100'000)->set_line(1);  // not compared
  proto::Instruction* changed = Stream0(b)->mutable_instructions(199'000);
  changed->mutable_operands(0)->set_offset(changed->operands(0).offset() + 3);
  const auto start = std::chrono::steady_clock::now();
  const DiffResult result = MustDiff(a, b);
  const double seconds = Seconds(start);
  EXPECT_EQ(result.instruction_counts.removed, 1);
  EXPECT_EQ(result.instruction_counts.changed, 1);
  EXPECT_EQ(result.instruction_counts.added, 0);
  EXPECT_LT(seconds, kLinearNotQuadraticSeconds);
}

// --- JSON ------------------------------------------------------------------

TEST(DiffJsonTest, WriterEscapesEverythingJsonNeeds) {
  const std::string quoted =
      diff::JsonWriter::Quote("a\"b\\c\nd\te\x01 caf\xc3\xa9 bad\xff end");
  EXPECT_EQ(quoted,
            "\"a\\\"b\\\\c\\nd\\te\\u0001 caf\xc3\xa9 bad\\ufffd end\"");
  EXPECT_TRUE(JsonValidator(quoted).Valid());
  EXPECT_FALSE(JsonValidator("\"a\nb\"").Valid());  // the validator can fail
  EXPECT_FALSE(JsonValidator("{\"a\": 1,}").Valid());
}

TEST(DiffJsonTest, OutputParsesAndEndsWithTheSummary) {
  const proto::Graph a = Matmul();
  proto::Graph b = a;
  RemoveInstr(Stream0(b), 5);
  FindTensorNamed(b, "lhs")->set_name("weird \"name\"\n\\");
  b.mutable_params(1)->set_value("30\x01");
  const DiffResult result = MustDiff(a, b);
  const std::string json =
      diff::FormatJson(result, {.label_a = "a.pb", .label_b = "b\".pb"});
  EXPECT_TRUE(JsonValidator(json).Valid()) << json;
  EXPECT_THAT(json, HasSubstr("\"change\": \"removed\""));
  EXPECT_THAT(json, HasSubstr("\"index_a\": 5"));
  EXPECT_THAT(json, HasSubstr("\"name_b\": \"weird \\\"name\\\"\\n\\\\\""));
  // The summary is the last member.
  const size_t summary = json.rfind("\"summary\"");
  ASSERT_NE(summary, std::string::npos);
  EXPECT_EQ(json.find("\"streams\"", summary), std::string::npos);
  EXPECT_THAT(json.substr(summary), HasSubstr("\"removed\": 1"));
  if (PythonAvailable()) {
    EXPECT_TRUE(PythonParses(json));
    EXPECT_FALSE(PythonParses(json.substr(0, json.size() / 2)));
  }
  // Identical graphs: still a whole document.
  EXPECT_TRUE(JsonValidator(diff::FormatJson(MustDiff(a, a), {})).Valid());
}

// --- The CLI -----------------------------------------------------------------

class DiffCliTest : public testing::CliFixture {
 protected:
  using Result = testing::CliResult;

  // Runs `nkigraph diff <args>`.
  Result Run(const std::string& args) {
    return RunCli(absl::StrCat("diff ", args));
  }

  // Writes the base graph as a.pb and, edited, as b.pbtxt.
  void WriteGraphs(bool edit_line_only = false) {
    const proto::Graph a = Matmul();
    proto::Graph b = a;
    if (edit_line_only) {
      Stream0(b)->mutable_instructions(2)->set_line(999);
    } else {
      RemoveInstr(Stream0(b), 4);
    }
    ASSERT_TRUE(WriteGraph(a, Path("a.pb")).ok());
    ASSERT_TRUE(WriteGraph(b, Path("b.pbtxt")).ok());
    ASSERT_TRUE(WriteGraph(a, Path("a_copy.pbtxt")).ok());
  }
};

TEST_F(DiffCliTest, ExitsZeroForTheSameGraphAcrossFormats) {
  WriteGraphs();
  const Result r =
      Run(absl::StrCat("'", Path("a.pb"), "' '", Path("a_copy.pbtxt"), "'"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "summary: no differences (0 added, 0 removed, 0 changed)\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(DiffCliTest, ExitsOneWithTheDiffAndTheSummaryLast) {
  WriteGraphs();
  const Result r =
      Run(absl::StrCat("'", Path("a.pb"), "' '", Path("b.pbtxt"), "'"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0], absl::StrCat("--- ", Path("a.pb")));
  EXPECT_EQ(lines[1], absl::StrCat("+++ ", Path("b.pbtxt")));
  EXPECT_THAT(r.out, HasSubstr("\n  - a:4 "));
  EXPECT_THAT(lines.back(),
              StartsWith("summary: 0 added, 1 removed, 0 changed"));
}

TEST_F(DiffCliTest, StrictAndJsonFlags) {
  WriteGraphs(/*edit_line_only=*/true);
  const std::string files =
      absl::StrCat("'", Path("a.pb"), "' '", Path("b.pbtxt"), "'");
  EXPECT_EQ(Run(files).exit_code, 0);
  const Result strict = Run(absl::StrCat("--strict ", files));
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_THAT(strict.out, HasSubstr("      source: "));
  EXPECT_THAT(strict.out, HasSubstr(":999\n"));

  const Result json = Run(absl::StrCat("--strict --format json ", files));
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_TRUE(JsonValidator(json.out).Valid()) << json.out;
  EXPECT_THAT(json.out, HasSubstr("\"strict\": true"));
  EXPECT_THAT(json.out, HasSubstr("\"field\": \"source\""));
  if (PythonAvailable()) {
    EXPECT_TRUE(PythonParses(json.out));
  }
  const Result same_json = Run(absl::StrCat("--format=json ", files));
  EXPECT_EQ(same_json.exit_code, 0);
  EXPECT_THAT(same_json.out, HasSubstr("\"same\": true"));
}

TEST_F(DiffCliTest, ErrorsExitTwoWithOneLine) {
  WriteGraphs();
  std::ofstream(Path("junk.pb")) << "\xff\xff not a graph";
  const std::string a = absl::StrCat("'", Path("a.pb"), "'");
  for (const std::string& args : {absl::StrCat(a, " '", Path("absent.pb"), "'"),
                                  absl::StrCat(a, " '", Path("junk.pb"), "'"),
                                  a, absl::StrCat(a, " ", a, " --format xml"),
                                  absl::StrCat(a, " ", a, " --limit -3"),
                                  absl::StrCat(a, " ", a, " --frob")}) {
    SCOPED_TRACE(args);
    const Result r = Run(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    ASSERT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_THAT(r.err, StartsWith("nkigraph diff: error: "));
  }
  const Result help = Run("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: nkigraph diff A B"));
}

}  // namespace
}  // namespace nkigraph
