// KernelRegistry::AddToGlobal: what it refuses. (Adding before the first
// read is what a program's main does: examples/my_kernels's command and
// its ctest, run by the install test, exercise it.)
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/registry.h"
#include "kernels/tiled_matmul.h"

namespace nkigraph::kernels {
namespace {

using ::testing::HasSubstr;

TEST(RegistryGlobal, RefusesATakenName) {
  const absl::Status status = KernelRegistry::AddToGlobal(
      [](KernelRegistry& r) { r.Register(TiledMatmulSpec()); });
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(status.message(), HasSubstr("'tiled_matmul'"));
}

TEST(RegistryGlobal, RefusesTwoKernelsOfOneName) {
  KernelDef a;
  a.name = "twice";
  const absl::Status status =
      KernelRegistry::AddToGlobal([&](KernelRegistry& r) {
        r.Register(a);
        r.Register(a);
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(status.message(), HasSubstr("'twice'"));
}

TEST(RegistryGlobal, RefusesAfterTheFirstRead) {
  const size_t before = KernelRegistry::Global().kernels().size();
  KernelDef late;
  late.name = "late_kernel";
  const absl::Status status =
      KernelRegistry::AddToGlobal([&](KernelRegistry& r) { r.Register(late); });
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(KernelRegistry::Global().Find("late_kernel"), nullptr);
  EXPECT_EQ(KernelRegistry::Global().kernels().size(), before);
}

}  // namespace
}  // namespace nkigraph::kernels
