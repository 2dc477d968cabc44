#include "ops/blas_threads.h"

#include <optional>
#include <thread>

#include "interp/interpreter.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

TEST(SingleThreadedBlasTest, HoldsOneThreadUntilTheLastHolderLeaves) {
  const int found = ops::BlasThreads();
  if (found == 1) GTEST_SKIP() << "OpenBLAS runs one thread here already";
  std::optional<ops::SingleThreadedBlas> outer;
  outer.emplace();
  EXPECT_EQ(ops::BlasThreads(), 1);
  {
    ops::SingleThreadedBlas inner;
    EXPECT_EQ(ops::BlasThreads(), 1);
  }
  EXPECT_EQ(ops::BlasThreads(), 1) << "an inner holder restored the count";
  outer.reset();
  EXPECT_EQ(ops::BlasThreads(), found);
}

TEST(SingleThreadedBlasTest, HoldersOnSeveralThreadsRestoreTheCountFound) {
  const int found = ops::BlasThreads();
  std::thread a([] { ops::SingleThreadedBlas hold; });
  std::thread b([] { ops::SingleThreadedBlas hold; });
  a.join();
  b.join();
  EXPECT_EQ(ops::BlasThreads(), found);
}

// A run on several workers gives OpenBLAS's count back. (That the bits are
// those of a one-worker run, whose matmuls may use OpenBLAS's threads, is
// parallel_run_test's.)
TEST(SingleThreadedBlasTest, RunOnSeveralWorkersRestoresBlasThreads) {
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
