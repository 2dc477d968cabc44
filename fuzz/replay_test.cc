// Replays every file under tests/fuzz_regressions/<target>/ through its
// fuzz target (a finding aborts the test), and checks that the harness
// drives the library as far as it claims on inputs of known shape.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "fuzz/harness.h"
#include "fuzz/harness_support.h"
#include "fuzz/replay_paths.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "interp/interpreter.h"
#include "util/file_io.h"
#include "util/graph_io.h"
#include "util/named_array.h"
#include "util/npy.h"

namespace nkigraph::fuzz {
namespace {

namespace fs = std::filesystem;

fs::path RegressionRoot() {
  return fs::path(SourceDir()) / "tests" / "fuzz_regressions";
}

struct RegressionFile {
  std::string target;
  fs::path path;
};

// gtest prints the parameter of a failed case: the file, not its bytes.
void PrintTo(const RegressionFile& file, std::ostream* out) {
  *out << file.path.string();
}

std::vector<RegressionFile> RegressionFiles() {
  std::vector<RegressionFile> files;
  for (const Target& target : Targets()) {
    const fs::path dir = RegressionRoot() / target.name;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().filename() != "README.md") {
        files.push_back({target.name, entry.path()});
      }
    }
  }
  std::sort(files.begin(), files.end(),
            [](const RegressionFile& a, const RegressionFile& b) {
              return a.path < b.path;
            });
  return files;
}

std::string TestName(const ::testing::TestParamInfo<RegressionFile>& info) {
  std::string name =
      absl::StrCat(info.param.target, "_", info.param.path.filename().string());
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class FuzzRegressionTest : public ::testing::TestWithParam<RegressionFile> {
 protected:
  static void SetUpTestSuite() { InitializeHarness(); }
};

TEST_P(FuzzRegressionTest, ReplaysWithoutAFinding) {
  const RegressionFile& file = GetParam();
  absl::StatusOr<std::string> bytes = ReadFile(file.path.string());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Target* target = FindTarget(file.target);
  ASSERT_NE(target, nullptr);
  // A finding aborts inside this call, failing the test with its report.
  const Outcome outcome = target->run(*bytes);
  std::cout << file.path.filename().string() << ": " << OutcomeName(outcome)
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(Files, FuzzRegressionTest,
                         ::testing::ValuesIn(RegressionFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FuzzRegressionTest);

TEST(FuzzRegressionLayoutTest, EveryDirectoryNamesATarget) {
  ASSERT_TRUE(fs::is_directory(RegressionRoot()));
  for (const fs::directory_entry& entry :
       fs::directory_iterator(RegressionRoot())) {
    if (!entry.is_directory()) continue;
    EXPECT_NE(FindTarget(entry.path().filename().string()), nullptr)
        << entry.path() << " is replayed by no target";
  }
}

// --- The harness on inputs whose fate is known ---------------------------

class HarnessTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { InitializeHarness(); }

  static std::string GoldenText(const std::string& name) {
    absl::StatusOr<std::string> text =
        ReadFile((fs::path(SourceDir()) / "tests" / "golden" / name).string());
    EXPECT_TRUE(text.ok()) << text.status();
    return text.ok() ? *text : "";
  }
  static proto::Graph Golden(const std::string& name) {
    proto::Graph graph;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(GoldenText(name),
                                                              &graph));
    return graph;
  }
  static std::string GoldenBytes(const std::string& name) {
    return SerializeDeterministic(Golden(name));
  }
  // [options byte][length of A][A][B], the diff target's input.
  static std::string DiffInput(uint8_t options, const std::string& a,
                               const std::string& b) {
    const uint32_t length = static_cast<uint32_t>(a.size());
    std::string input(1, static_cast<char>(options));
    input.append(reinterpret_cast<const char*>(&length), sizeof(length));
    return input + a + b;
  }
};

TEST_F(HarnessTest, AGoldenGraphRunsInBothFormats) {
  EXPECT_EQ(FuzzTextGraphFile(GoldenText("tiled_matmul_small.pbtxt")),
            Outcome::kDone);
  EXPECT_EQ(FuzzGraphFile(GoldenBytes("tiled_matmul_small.pbtxt")),
            Outcome::kDone);
  // Four ranks of a collective.
  EXPECT_EQ(FuzzGraphFile(GoldenBytes("sb2sb_allgather_small.pbtxt")),
            Outcome::kDone);
}

TEST_F(HarnessTest, ReadersAndValidationRefuseWhatTheyShould) {
  EXPECT_EQ(FuzzGraphFile("not a graph"), Outcome::kUnreadable);
  EXPECT_EQ(FuzzTextGraphFile("tensors { id: "), Outcome::kUnreadable);
  proto::Graph graph = Golden("tiled_matmul_small.pbtxt");
  graph.mutable_world()->set_num_cores(3);
  EXPECT_EQ(FuzzGraphFile(SerializeDeterministic(graph)), Outcome::kInvalid);
}

// x -> y by `copies` dma_copy instructions: valid at any length.
proto::Graph CopyChain(int copies) {
  proto::Graph graph;
  graph.set_schema_version(proto::SCHEMA_VERSION_CURRENT);
  graph.set_kernel_name("copy_chain");
  graph.mutable_world()->set_target(proto::TARGET_TRN2);
  graph.mutable_world()->set_num_ranks(1);
  graph.mutable_world()->set_num_cores(1);
  for (int i = 0; i < 2; ++i) {
    proto::Tensor* t = graph.add_tensors();
    t->set_id(i + 1);
    t->set_name(i == 0 ? "x" : "y");
    t->set_space(proto::HBM);
    t->set_dtype(proto::FLOAT32);
    t->add_shape(4);
    t->set_address(64 * i);
    t->set_role(i == 0 ? proto::ROLE_INPUT : proto::ROLE_OUTPUT);
  }
  proto::Stream* stream = graph.add_streams();
  for (int i = 0; i < copies; ++i) {
    proto::Instruction* copy = stream->add_instructions();
    copy->set_id(i);
    copy->set_opcode(proto::DMA_COPY);
    for (uint32_t id : {2u, 1u}) {
      proto::AccessPattern* ap = copy->add_operands();
      ap->set_tensor_id(id);
      ap->add_pattern(1);
      ap->add_pattern(4);
    }
  }
  graph.add_files("copy_chain");
  graph.add_scopes("");
  return graph;
}

TEST_F(HarnessTest, RunsStopAtTheStepLimit) {
  EXPECT_EQ(FuzzGraphFile(SerializeDeterministic(CopyChain(kMaxSteps))),
            Outcome::kDone);
  EXPECT_EQ(FuzzGraphFile(SerializeDeterministic(CopyChain(kMaxSteps + 1))),
            Outcome::kRefused);
  // The options the harness runs with stop the same graph at its limit,
  // naming it.
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(CopyChain(kMaxSteps + 1), FuzzRunOptions());
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE((*created)->FillRandomInputs(1).ok());
  const absl::Status ran = (*created)->Run();
  EXPECT_EQ(ran.code(), absl::StatusCode::kResourceExhausted) << ran;
  EXPECT_TRUE(absl::StrContains(ran.message(),
                                absl::StrCat("step limit of ", kMaxSteps, " ")))
      << ran;
}

TEST_F(HarnessTest, NpyArraysOfEveryHostDTypeLoadAndCopy) {
  auto array = [](proto::DType dtype, std::vector<int64_t> shape) {
    HostArray a;
    a.name = "x";
    a.dtype = dtype;
    a.shape = std::move(shape);
    return a;
  };
  HostArray f32 = array(proto::FLOAT32, {2, 3});
  f32.f32 = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -7.0f};
  HostArray i32 = array(proto::INT32, {4});
  i32.i32 = {1, -2, 100, 7};
  HostArray u16 = array(proto::UINT16, {1, 1, 2});
  u16.u16 = {0x3F80, 0xC000};
  HostArray scalar = array(proto::FLOAT32, {});
  scalar.f32 = {4.0f};
  for (const HostArray& array : {f32, i32, u16, scalar}) {
    absl::StatusOr<std::string> bytes = SerializeNpy(array);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(FuzzNpyFile(*bytes), Outcome::kDone)
        << array.shape.size() << "-d";
  }
  EXPECT_EQ(FuzzNpyFile("\x93NUMPY\x01"), Outcome::kUnreadable);
}

TEST_F(HarnessTest, ABundleWrittenByARunReplays) {
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> created =
      interp::Interpreter::Create(Golden("tiled_matmul_small.pbtxt"));
  ASSERT_TRUE(created.ok()) << created.status();
  interp::Interpreter& interp = **created;
  proto::Bundle bundle;
  *bundle.mutable_graph() = interp.graph();
  // Every input 1.0: bf16 inputs as raw bits, the bias as float32.
  for (const std::string& name : interp.InputNames()) {
    const proto::Tensor* tensor = interp.FindInput(name);
    HostArray input;
    input.name = name;
    input.shape = interp.HostShape(*tensor);
    if (tensor->dtype() == proto::BFLOAT16) {
      input.dtype = proto::UINT16;
      input.u16.assign(input.num_elements(), 0x3F80);
    } else {
      ASSERT_EQ(tensor->dtype(), proto::FLOAT32) << name;
      input.f32.assign(input.num_elements(), 1.0f);
    }
    ASSERT_TRUE(interp.SetInput(input).ok());
    *bundle.add_inputs() = ToNamedArray(input);
  }
  ASSERT_TRUE(interp.Run().ok());
  for (const std::string& name : interp.OutputNames()) {
    absl::StatusOr<HostArray> output =
        interp.GetOutput(name, interp::Interpreter::HostForm::kRawBits16);
    ASSERT_TRUE(output.ok());
    *bundle.add_outputs() = ToNamedArray(*output);
  }
  EXPECT_EQ(FuzzBundleFile(SerializeDeterministic(bundle)), Outcome::kDone);
  // An array whose data does not match its shape stops the replay.
  bundle.mutable_inputs(0)->mutable_data()->pop_back();
  EXPECT_EQ(FuzzBundleFile(SerializeDeterministic(bundle)), Outcome::kInvalid);
}

TEST_F(HarnessTest, TwoGraphsDiffBothWays) {
  const std::string a = GoldenBytes("tiled_matmul_small.pbtxt");
  const std::string b = GoldenBytes("tiled_matmul_f32_gelu_nobias.pbtxt");
  EXPECT_EQ(FuzzDiffInput(DiffInput(0, a, b)), Outcome::kDone);
  EXPECT_EQ(FuzzDiffInput(DiffInput(3, a, a)), Outcome::kDone);
  EXPECT_EQ(FuzzDiffInput("ab"), Outcome::kUnreadable);
}

TEST_F(HarnessTest, BothViewsDrawToDot) {
  const std::string graph = GoldenBytes("fgcc_small.pbtxt");
  EXPECT_EQ(FuzzVizInput(std::string("\x00\x00", 2) + graph), Outcome::kDone);
  EXPECT_EQ(FuzzVizInput(std::string("\x01\x00", 2) + graph), Outcome::kDone);
  // A core that is not there selects nothing: an error, not a picture.
  EXPECT_EQ(FuzzVizInput(std::string("\x00\x07", 2) + graph),
            Outcome::kInvalid);
}

TEST(RequireTest, ABrokenInvariantAborts) {
  EXPECT_DEATH(Require(false, "the bits changed"),
               "fuzz invariant broken: the bits changed");
}

}  // namespace
}  // namespace nkigraph::fuzz
