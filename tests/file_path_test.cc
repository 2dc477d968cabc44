// The file path a user scripts against, for every registered kernel: the
// inputs an in-process verification ran on, written to .npy files, go
// through `nkigraph trace` → `nkigraph run --input NAME=FILE` → the output
// files, and must equal the in-process outputs bit for bit; the same run
// with --raw-bits gives 16-bit outputs as their bits; the bundle it saves
// replays bit for bit. Kernels run at their defaults (their example where
// parameters are required), and in-place kernels with inplace 0 and 1.
// (cross_entropy_backward's in-place output could not be read back through
// `run` while `verify` passed.)
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "tests/cli_fixture.h"
#include "tools/verify_kernel.h"
#include "util/dtype.h"
#include "util/npy.h"
#include "util/tensor_roles.h"

namespace nkigraph {
namespace {

using kernels::KernelRegistry;
using kernels::Settings;

struct Variant {
  std::string kernel;
  Settings settings;
};

std::vector<Variant> Variants() {
  std::vector<Variant> variants;
  for (const kernels::KernelDef& def : KernelRegistry::Global().kernels()) {
    if (!def.reference) continue;
    bool inplace = false;
    for (const kernels::ParamSpec& p : def.params)
      inplace |= p.name == "inplace";
    if (!inplace) {
      variants.push_back({def.name, def.example});
      continue;
    }
    for (const char* value : {"0", "1"}) {
      Settings settings = def.example;
      settings.emplace_back("inplace", value);
      variants.push_back({def.name, settings});
    }
  }
  return variants;
}

std::string NameOf(const Variant& v) {
  std::string name = v.kernel;
  for (const auto& [key, value] : v.settings) {
    if (key == "inplace") absl::StrAppend(&name, "_inplace", value);
  }
  return name;
}

// Bit for bit: the same shape and dtype and the same bytes (NaN payloads
// and signed zeros included).
void ExpectSameBits(const HostArray& got, const HostArray& want) {
  ASSERT_EQ(got.shape, want.shape) << want.name;
  ASSERT_EQ(got.dtype, want.dtype) << want.name;
  EXPECT_EQ(got.f32.size(), want.f32.size()) << want.name;
  EXPECT_EQ(got.i32, want.i32) << want.name;
  EXPECT_EQ(got.u16, want.u16) << want.name;
  if (got.f32.size() != want.f32.size()) return;
  int64_t differ = 0, first = -1;
  for (size_t k = 0; k < got.f32.size(); ++k) {
    if (std::memcmp(&got.f32[k], &want.f32[k], 4) != 0) {
      if (first < 0) first = static_cast<int64_t>(k);
      ++differ;
    }
  }
  EXPECT_EQ(differ, 0) << want.name << ": first at " << first << ": got "
                       << got.f32[first] << ", want " << want.f32[first];
}

// float32 values of bfloat16 numbers as the bfloat16 bits: their top half.
HostArray Bf16BitsOf(const HostArray& floats) {
  HostArray bits;
  bits.name = floats.name;
  bits.shape = floats.shape;
  bits.dtype = proto::UINT16;
  for (const float f : floats.f32) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits.u16.push_back(static_cast<uint16_t>(u >> 16));
  }
  return bits;
}

class FilePathTest : public testing::CliFixture,
                     public ::testing::WithParamInterface<Variant> {};

TEST_P(FilePathTest, TraceRunAndReplayFromFilesEqualTheInProcessRun) {
  const Variant& variant = GetParam();
  const KernelRegistry& registry = KernelRegistry::Global();
  const kernels::KernelDef* def = registry.Find(variant.kernel);
  ASSERT_NE(def, nullptr);
  tools::KernelVerification v;
  ASSERT_TRUE(tools::VerifyKernel(registry, *def, variant.settings, 1,
                                  interp::RunOptions{}, &v)
                  .ok());
  ASSERT_TRUE(v.passed());

  std::string sets, inputs;
  for (const auto& [key, value] : variant.settings) {
    absl::StrAppend(&sets, " --set ", key, "=", value);
  }
  for (const HostArray& input : v.inputs) {
    const std::string path = Path(absl::StrCat(input.name, ".npy"));
    ASSERT_TRUE(WriteNpy(path, input).ok()) << input.name;
    absl::StrAppend(&inputs, " --input '", input.name, "=", path, "'");
  }
  const std::string graph = Path("g.pb");
  testing::CliResult r =
      RunCli(absl::StrCat("trace ", variant.kernel, sets, " -o '", graph, "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli(absl::StrCat("run '", graph, "'", inputs, " -o '", Path("out"),
                          "' --save-bundle '", Path("bundle.pb"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunCli(absl::StrCat("run '", graph, "'", inputs, " --raw-bits -o '",
                          Path("raw"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Random inputs write the same files.
  r = RunCli(absl::StrCat("run '", graph, "' --random-inputs 1 -o '",
                          Path("random"), "'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // Every output the graph declares, by its output name.
  const proto::Graph& traced = v.interp->graph();
  int64_t outputs = 0;
  for (const proto::Tensor& t : traced.tensors()) {
    if (!IsHostOutput(t)) continue;
    ++outputs;
    const std::string& name = HostOutputName(t);
    SCOPED_TRACE(name);
    const HostArray* want = nullptr;
    for (const HostArray& o : v.outputs) {
      if (o.name == name) want = &o;
    }
    ASSERT_NE(want, nullptr);
    absl::StatusOr<HostArray> got =
        ReadNpy(Path(absl::StrCat("out/", name, ".npy")));
    ASSERT_TRUE(got.ok()) << got.status();
    got->name = name;
    ExpectSameBits(*got, *want);
    absl::StatusOr<HostArray> random =
        ReadNpy(Path(absl::StrCat("random/", name, ".npy")));
    ASSERT_TRUE(random.ok()) << random.status();
    EXPECT_EQ(random->shape, want->shape);
    absl::StatusOr<HostArray> raw =
        ReadNpy(Path(absl::StrCat("raw/", name, ".npy")));
    ASSERT_TRUE(raw.ok()) << raw.status();
    raw->name = name;
    if (t.dtype() == proto::BFLOAT16) {
      ExpectSameBits(*raw, Bf16BitsOf(*want));
    } else {
      ASSERT_NE(DTypeSize(t.dtype()), 2) << "a 2-byte dtype this test lacks";
      ExpectSameBits(*raw, *want);
    }
  }
  EXPECT_EQ(outputs, static_cast<int64_t>(v.outputs.size()));

  r = RunCli(absl::StrCat("replay '", Path("bundle.pb"), "'"));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Kernels, FilePathTest, ::testing::ValuesIn(Variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return NameOf(info.param);
                         });

}  // namespace
}  // namespace nkigraph
