// The boundary sweep (kernels/boundary_cases.h, tools/boundary_sweep.h):
// every registered kernel with a reference, each integer parameter at its
// smallest legal value, at 1, at its default and either side of every tile
// size it is cut by, with every flag and choice (float32 and bfloat16
// among them), pairwise: each case traced, run and compared with the
// kernel's reference, and every legal case must pass (none refused when
// traced). One test case per kernel, so ctest spreads them over the
// machine. The full product, or 3-wise where it is too big, is
// scripts/boundary_sweep.sh's.
//
// Then the covering itself, on a kernel of its own: every pair of values
// of two parameters meets in some case, refused combinations are no case,
// and a pair no legal case holds is counted as infeasible.
#include "tools/boundary_sweep.h"

#include <iostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/boundary_cases.h"
#include "kernels/kernel_spec.h"
#include "kernels/registry.h"

namespace nkigraph {
namespace {

using kernels::KernelRegistry;

// transformer_tkg composes attention_block_tkg and mlp_tkg, whose sizes
// their own sweeps cover pairwise: here its own parameters (batch and
// seq_tkg, layers, tp, the residual path, dtype) vary, the leaf sizes stay
// at their defaults. Swept together, its pairwise cases take minutes
// (its race detection on the shared caches), which is the script's.
std::vector<std::string> HeldInCi(const std::string& kernel) {
  if (kernel == "transformer_tkg") {
    return {"hidden",   "q_heads",   "kv_heads",
            "head_dim", "cache_len", "intermediate"};
  }
  return {};
}

class BoundarySweepTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundarySweepTest, EveryLegalPairwiseCaseMatchesTheReference) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const kernels::KernelDef* def = registry.Find(GetParam());
  ASSERT_NE(def, nullptr);
  tools::SweepOptions options;
  options.held = HeldInCi(def->name);
  interp::RunOptions run;
  run.threads = 1;
  absl::StatusOr<tools::SweepRow> row =
      tools::SweepKernel(registry, *def, options, run);
  ASSERT_TRUE(row.ok()) << row.status();
  std::cout << tools::FormatSweepTable({*row});
  EXPECT_GT(row->cases, 0);
  EXPECT_EQ(row->passed, row->cases);
  for (const tools::SweepOutcome& o : row->failed) {
    ADD_FAILURE() << def->name << " (" << kernels::DescribeCase(o.settings)
                  << "): " << o.why;
  }
  for (const tools::SweepOutcome& o : row->refused) {
    ADD_FAILURE() << def->name << " (" << kernels::DescribeCase(o.settings)
                  << ") refused a legal case when traced: " << o.why;
  }
}

std::vector<std::string> KernelsWithReferences() {
  std::vector<std::string> names;
  for (const kernels::KernelDef& def : KernelRegistry::Global().kernels()) {
    if (def.reference) names.push_back(def.name);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Kernels, BoundarySweepTest,
                         ::testing::ValuesIn(KernelsWithReferences()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// --- The covering -----------------------------------------------------------

struct GridParams {
  int64_t rows = 4;
  int64_t cols = 8;
  bool wide = false;
  proto::DType dtype = proto::BFLOAT16;
};

// rows in [1, 200] cut by 128, cols in [2, 600] cut by 512; wide=1 needs
// cols > 64, and rows = 129 with cols = 513 is refused.
const kernels::KernelDef& GridKernel() {
  using P = GridParams;
  static const auto* const spec = new kernels::KernelSpec<P>{
      .name = "grid",
      .summary = "nothing",
      .params = {kernels::IntField<P>("rows", &P::rows, {1, 200}, "rows")
                     .Edges(kernels::AroundTiles({128})),
                 kernels::IntField<P>("cols", &P::cols, {2, 600}, "cols")
                     .Edges(kernels::AroundTiles({512})),
                 kernels::FlagField<P>("wide", &P::wide, "wide"),
                 kernels::DTypeField<P>()},
      .validate =
          [](const P& p) {
            if (p.wide && p.cols <= 64) {
              return absl::InvalidArgumentError("wide needs cols > 64");
            }
            if (p.rows == 129 && p.cols == 513) {
              return absl::InvalidArgumentError("no");
            }
            return absl::OkStatus();
          },
      .io = {},
      .body = [](kernels::KernelIo&, const P&) {},
  };
  static const kernels::KernelDef* const def =
      new kernels::KernelDef(kernels::ToKernelDef(*spec));
  return *def;
}

TEST(BoundaryCasesTest, ValuesAreTheEdgesLimitsOneAndDefault) {
  const std::vector<kernels::SweepFactor> factors =
      kernels::BoundaryFactors(GridKernel());
  ASSERT_EQ(factors.size(), 4u);
  using V = std::vector<std::optional<std::string>>;
  EXPECT_EQ(factors[0].values, (V{"1", "4", "127", "128", "129"}));
  // 513 is inside [2, 600]; 1 is not.
  EXPECT_EQ(factors[1].values, (V{"2", "8", "511", "512", "513"}));
  EXPECT_EQ(factors[2].values, (V{"0", "1"}));
  EXPECT_EQ(factors[3].values, (V{"float32", "bfloat16"}));
}

TEST(BoundaryCasesTest, EveryFeasiblePairMeetsInALegalCase) {
  const KernelRegistry& registry = KernelRegistry::Global();
  const kernels::KernelDef& def = GridKernel();
  absl::StatusOr<kernels::BoundaryCases> cases =
      kernels::CoveringCases(registry, def, 2);
  ASSERT_TRUE(cases.ok()) << cases.status();
  const std::vector<kernels::SweepFactor> factors =
      kernels::BoundaryFactors(def);
  // Pairs of (name=value) that some case holds; every case legal.
  std::set<std::pair<std::string, std::string>> met;
  for (const kernels::Settings& c : cases->cases) {
    EXPECT_TRUE(registry.ParseParams(def, c).ok()) << kernels::DescribeCase(c);
    for (const auto& [a, va] : c) {
      for (const auto& [b, vb] : c) {
        met.emplace(a + "=" + va, b + "=" + vb);
      }
    }
  }
  // By hand: the pairs no legal case holds are wide=1 with cols 2 and 8,
  // and rows 129 with cols 513.
  const std::set<std::pair<std::string, std::string>> infeasible = {
      {"cols=2", "wide=1"}, {"cols=8", "wide=1"}, {"rows=129", "cols=513"}};
  int64_t pairs = 0;
  for (size_t i = 0; i < factors.size(); ++i) {
    for (size_t j = i + 1; j < factors.size(); ++j) {
      for (const auto& a : factors[i].values) {
        for (const auto& b : factors[j].values) {
          ++pairs;
          const std::string x = factors[i].name + "=" + *a;
          const std::string y = factors[j].name + "=" + *b;
          if (infeasible.contains({x, y})) {
            EXPECT_FALSE(met.contains({x, y})) << x << ", " << y;
          } else {
            EXPECT_TRUE(met.contains({x, y})) << x << ", " << y;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases->tuples, pairs);
  EXPECT_EQ(cases->infeasible, 3);
  // Far fewer than the 200 of the product.
  EXPECT_LT(cases->cases.size(), 40u);
}

TEST(BoundaryCasesTest, TheProductIsEveryLegalCombination) {
  absl::StatusOr<kernels::BoundaryCases> product = kernels::ProductCases(
      KernelRegistry::Global(), GridKernel(), /*limit=*/1000);
  ASSERT_TRUE(product.ok()) << product.status();
  // 5 · 5 · 2 · 2 = 100 combinations, less wide=1 with cols 2 or 8
  // (5 · 2 · 2 = 20) and rows 129 with cols 513 (2 · 2 = 4; wide is
  // allowed there).
  EXPECT_EQ(product->cases.size(), 76u);
  EXPECT_FALSE(product->truncated);
  absl::StatusOr<kernels::BoundaryCases> cut = kernels::ProductCases(
      KernelRegistry::Global(), GridKernel(), /*limit=*/10);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->cases.size(), 10u);
  EXPECT_TRUE(cut->truncated);
}

}  // namespace
}  // namespace nkigraph
