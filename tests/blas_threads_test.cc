#include "ops/blas_threads.h"

#include <optional>
#include <thread>

#include "interp/interpreter.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

TEST(ScopedBlasThreadsTest, ScopesAliveAtOnceRunTheFewestAndTheLastRestores) {
  const int found = ops::BlasThreads();
  std::optional<ops::ScopedBlasThreads> outer;
  EXPECT_EQ(ops::LentThreads(), 1) << "outside any scope";
  outer.emplace(2);
  EXPECT_EQ(ops::BlasThreads(), 2);
  EXPECT_EQ(ops::LentThreads(), 2);
  {
    ops::ScopedBlasThreads inner(1);
    EXPECT_EQ(ops::BlasThreads(), 1);
    EXPECT_EQ(ops::LentThreads(), 1);
    // A third asking for more than the fewest gets the fewest.
    ops::ScopedBlasThreads third(4);
    EXPECT_EQ(ops::BlasThreads(), 1);
    EXPECT_EQ(ops::LentThreads(), 1);
  }
  EXPECT_EQ(ops::BlasThreads(), 1) << "a scope ended while another was alive";
  EXPECT_EQ(ops::LentThreads(), 1);
  outer.reset();
  EXPECT_EQ(ops::BlasThreads(), found);
  EXPECT_EQ(ops::LentThreads(), 1);
}

TEST(ScopedBlasThreadsTest, AtLeastOneThread) {
  const int found = ops::BlasThreads();
  {
    ops::ScopedBlasThreads none(0);
    EXPECT_EQ(ops::BlasThreads(), 1);
  }
  EXPECT_EQ(ops::BlasThreads(), found);
}

TEST(ScopedBlasThreadsTest, ScopesOnSeveralThreadsRestoreTheCountFound) {
  const int found = ops::BlasThreads();
  std::thread a([] { ops::ScopedBlasThreads scope(1); });
  std::thread b([] { ops::ScopedBlasThreads scope(2); });
  a.join();
  b.join();
  EXPECT_EQ(ops::BlasThreads(), found);
}

// A run on several workers gives OpenBLAS's count back. (That the bits are
// those of a one-worker run, whose matmuls may use OpenBLAS's threads, is
// parallel_run_test's.)
TEST(ScopedBlasThreadsTest, RunOnSeveralWorkersRestoresBlasThreads) {
  std::vector<HostArray> inputs;
  const proto::Graph graph = testing::TraceKernel(
      "fgcc", {{"tp_degree", "2"}, {"m", "128"}, {"k", "128"}, {"n", "128"}},
      &inputs);
  const int found = ops::BlasThreads();
  interp::RunOptions options;
  options.threads = 2;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph, options);
  ASSERT_TRUE(interp.ok()) << interp.status();
  ASSERT_TRUE((*interp)->FillRandomInputs(1).ok());
  ASSERT_TRUE((*interp)->Run().ok());
  EXPECT_EQ(ops::BlasThreads(), found);
}

}  // namespace
}  // namespace nkigraph
