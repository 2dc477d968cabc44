// `mpirun -np P nkigraph run|verify`: the files a run across processes
// writes (outputs, replay bundles, dumps) are the single process's byte for
// byte, for P dividing the ranks and not; a device error in one rank and a
// deadlock are reported by every process as one process reports them; a
// killed process makes the others stop within the peer timeout. Built and
// registered only when CMake found MPI.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli_fixture.h"
#include "util/graph_io.h"
#include "util/npy.h"

namespace nkigraph::testing {
namespace {

using ::testing::HasSubstr;

class MpiCliTest : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    // Open MPI refuses root without these (CI containers run as root).
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }

  // `mpirun -np P nkigraph <args>`; each process's stderr is in
  // ProcessErr(p) afterwards.
  CliResult RunMpi(int processes, const std::string& args) {
    std::system(absl::StrCat("rm -rf '", Path("mpi_out"), "'").c_str());
    const std::string out = Path("stdout.txt");
    const std::string err = Path("stderr.txt");
    const std::string command = absl::StrCat(
        "'", NKIGRAPH_MPIEXEC, "' -np ", processes, " ", mpirun_options_,
        " --oversubscribe --output-filename '", Path("mpi_out"), "' '",
        CliPath(), "' ", args, " >'", out, "' 2>'", err, "' </dev/null");
    const int status = std::system(command.c_str());
    CliResult result;
    if (status != -1 && WIFEXITED(status)) {
      result.exit_code = WEXITSTATUS(status);
    }
    result.out = Slurp(out);
    result.err = Slurp(err);
    return result;
  }
  // Options every later RunMpi passes to mpirun.
  std::string mpirun_options_;

  std::string ProcessErr(int p) {
    return Slurp(Path(absl::StrCat("mpi_out/1/rank.", p, "/stderr")));
  }

  // Runs `graph` in one process and over each count of processes and
  // compares the output files and the bundle byte for byte.
  void ExpectSameFiles(const std::string& graph, const std::vector<int>& counts,
                       const std::string& inputs,
                       std::vector<std::string> outs);
  // Each process's stderr is the single process's, and its exit code.
  void ExpectSameError(const std::string& args, const std::vector<int>& counts,
                       const std::string& fragment);

  std::string Trace(const std::string& kernel, const std::string& sets,
                    const std::string& file) {
    const CliResult r = RunCli(
        absl::StrCat("trace ", kernel, " ", sets, " -o '", Path(file), "'"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Path(file);
  }
};

// Runs `graph` in one process and over each count of processes and
// compares the output files and the bundle byte for byte.
void MpiCliTest::ExpectSameFiles(const std::string& graph,
                                 const std::vector<int>& counts,
                                 const std::string& inputs,
                                 std::vector<std::string> outs) {
  const CliResult one =
      RunCli(absl::StrCat("run '", graph, "' ", inputs, " -o '", Path("one"),
                          "' --save-bundle '", Path("one.pb"), "'"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  for (int p : counts) {
    const std::string dir = Path(absl::StrCat("p", p));
    const std::string bundle = Path(absl::StrCat("p", p, ".pb"));
    const CliResult r =
        RunMpi(p, absl::StrCat("run '", graph, "' ", inputs, " -o '", dir,
                               "' --save-bundle '", bundle, "'"));
    ASSERT_EQ(r.exit_code, 0) << p << " processes: " << r.err;
    std::string want_out =
        absl::StrReplaceAll(one.out, {{Path("one.pb"), bundle}});
    want_out = absl::StrReplaceAll(want_out, {{Path("one"), dir}});
    EXPECT_EQ(r.out, want_out) << p << " processes";
    for (const std::string& name : outs) {
      const std::string want = Slurp(Path("one/" + name + ".npy"));
      ASSERT_FALSE(want.empty());
      EXPECT_TRUE(Slurp(dir + "/" + name + ".npy") == want)
          << name << " differs over " << p << " processes";
    }
    EXPECT_TRUE(Slurp(bundle) == Slurp(Path("one.pb")))
        << "the bundle differs over " << p << " processes";
  }
}

TEST_F(MpiCliTest, KernelsWriteTheSingleProcessFiles) {
  // Kernels x tp x process counts, pairwise.
  const std::string small = "--set m=32 --set k=128 --set n=128";
  ExpectSameFiles(Trace("fgcc", "--set tp_degree=4 " + small, "fgcc4.pb"),
                  {1, 2, 4}, "--random-inputs 1", {"out"});
  ExpectSameFiles(Trace("fg_allgather",
                        "--set tp_degree=8 --set m=32 --set k=128", "fga8.pb"),
                  {2, 4}, "--random-inputs 2", {"out"});
  ExpectSameFiles(
      Trace("sb2sb_allgather", "--set tp_degree=8 --set rows=16 --set width=32",
            "sb8.pb"),
      {4}, "--random-inputs 3 --raw-bits", {"out"});
  ExpectSameFiles(Trace("transformer_tkg",
                        "--set tp_degree=4 --set num_layers=1", "tkg4.pb"),
                  {4}, "--random-inputs 4", {"out"});
  ExpectSameFiles(Trace("transformer_tkg",
                        "--set tp_degree=8 --set num_layers=1 --set hidden=256 "
                        "--set intermediate=128",
                        "tkg8.pb"),
                  {2}, "--random-inputs 5", {"out"});
}

TEST_F(MpiCliTest, UnevenSplitsAndInputFilesGiveTheSingleProcessFiles) {
  const std::string graph = Trace(
      "fgcc", "--set tp_degree=4 --set m=32 --set k=64 --set n=64", "fgcc4.pb");
  // Input files: each process reads its ranks' rows.
  HostArray lhs;
  lhs.name = "lhs";
  lhs.shape = {4, 32, 64};
  HostArray rhs;
  rhs.name = "rhs";
  rhs.shape = {4, 64, 64};
  for (HostArray* a : {&lhs, &rhs}) {
    a->f32.resize(a->num_elements());
    for (size_t i = 0; i < a->f32.size(); ++i) {
      a->f32[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    }
  }
  ASSERT_TRUE(WriteNpy(Path("lhs.npy"), lhs).ok());
  ASSERT_TRUE(WriteNpy(Path("rhs.npy"), rhs).ok());
  ExpectSameFiles(graph, {3},
                  absl::StrCat("-i lhs='", Path("lhs.npy"), "' -i rhs='",
                               Path("rhs.npy"), "'"),
                  {"out"});
}

// The graphs of the error cases, traced here: 4 ranks x 2 cores.
std::string WriteGraphFile(const std::string& path,
                           const std::function<void(builder::Tracer&)>& body) {
  absl::StatusOr<proto::Graph> graph = TraceWorld(4, 2, body);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) {
    EXPECT_TRUE(WriteGraph(*graph, path).ok());
  }
  return path;
}

// Each process's stderr is the single process's, and its exit code.
void MpiCliTest::ExpectSameError(const std::string& args,
                                 const std::vector<int>& counts,
                                 const std::string& fragment) {
  const CliResult one = RunCli(args);
  ASSERT_EQ(one.exit_code, 1) << one.err;
  ASSERT_THAT(one.err, HasSubstr(fragment));
  for (int p : counts) {
    const CliResult r = RunMpi(p, args);
    EXPECT_EQ(r.exit_code, 1) << p << " processes: " << r.err;
    for (int q = 0; q < p; ++q) {
      EXPECT_EQ(ProcessErr(q), one.err) << "process " << q << " of " << p;
    }
  }
}

// A graph whose program c copies row idx[c] of an 8-row table (idx holds
// one pair of rows per rank), after a core barrier; with `copy_first`,
// every program first copies row 1, so a dump has a write before the
// failing one.
std::string WriteIndexedCopyGraph(const std::string& path, bool copy_first) {
  return WriteGraphFile(path, [copy_first](builder::Tracer& t) {
    using builder::Buffer;
    const int c = t.program_id();
    builder::Tensor table = t.Input("table", {8, 64}, proto::FLOAT32, false);
    builder::Tensor idx = t.Input("idx", {2}, proto::INT32);
    builder::Tensor flag =
        t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
    builder::Tensor tile =
        builder::ndarray({1, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
    if (copy_first) builder::isa::dma_copy(tile, table.Slice(0, 1, 1));
    builder::isa::core_barrier(flag);
    builder::isa::dma_copy(
        tile, table.Slice(0, 0, 1).WithScalarOffset(idx.Slice(0, c, 1), 0));
  });
}

TEST_F(MpiCliTest, AnOutOfBoundsAccessInOneRankIsReportedByEveryProcess) {
  const std::string graph =
      WriteIndexedCopyGraph(Path("oob.pb"), /*copy_first=*/false);
  HostArray idx = Ints("idx", {4, 2}, {0, 1, 2, 3, 4, 5, 99, 7});
  ASSERT_TRUE(WriteNpy(Path("idx.npy"), idx).ok());
  ExpectSameError(absl::StrCat("run '", graph, "' --random-inputs 1 -i idx='",
                               Path("idx.npy"), "' -o '", Path("out"), "'"),
                  {2, 3}, "rank 3 core 0 instruction #");
}

TEST_F(MpiCliTest, ADeadlockIsReportedByEveryProcess) {
  const std::string graph =
      WriteGraphFile(Path("deadlock.pb"), [](builder::Tracer& t) {
        using builder::Buffer;
        builder::Tensor flag =
            t.Allocate({1}, proto::INT32, Buffer::kSharedHbm, "flag");
        builder::Tensor x = t.Input("x", {4, 64}, proto::FLOAT32);
        builder::Tensor tile =
            builder::ndarray({2, 64}, proto::FLOAT32, Buffer::kSbuf, "t");
        builder::isa::dma_copy(tile, x.Slice(0, 2 * t.program_id(), 2));
        builder::isa::core_barrier(flag);
        if (t.program_id() == 1) builder::isa::core_barrier(flag);
      });
  ExpectSameError(absl::StrCat("run '", graph, "' --random-inputs 1 -o '",
                               Path("out"), "'"),
                  {4}, "deadlock");
}

TEST_F(MpiCliTest, VerifyReportsAsOneProcess) {
  const std::string args =
      "verify fgcc --set tp_degree=4 --set m=32 --set k=64 --set n=64";
  const CliResult one = RunCli(args);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CliResult two = RunMpi(2, args);
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
}

TEST_F(MpiCliTest, LongMessagesTravelInPieces) {
  // Every message over 64 bytes in pieces (the round states, the
  // collectives' operands, the rows joined for the bundle), the same files.
  setenv("NKIGRAPH_MPI_MESSAGE_BYTES", "64", 1);
  mpirun_options_ = "-x NKIGRAPH_MPI_MESSAGE_BYTES";
  ExpectSameFiles(
      Trace("fgcc", "--set tp_degree=4 --set m=32 --set k=64 --set n=64",
            "fgcc4.pb"),
      {2, 3}, "--random-inputs 1", {"out"});
  // The bound is read: one that is not a number is refused.
  setenv("NKIGRAPH_MPI_MESSAGE_BYTES", "lots", 1);
  const CliResult r =
      RunMpi(2, absl::StrCat("run '", Path("fgcc4.pb"),
                             "' --random-inputs 1 -o '", Path("o"), "'"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(ProcessErr(0), HasSubstr("NKIGRAPH_MPI_MESSAGE_BYTES='lots'"));
  unsetenv("NKIGRAPH_MPI_MESSAGE_BYTES");
}

// `diff -r` of two dump directories: empty when they hold the same files
// with the same bytes.
std::string DiffDirs(const std::string& a, const std::string& b,
                     const std::string& report) {
  std::system(
      absl::StrCat("diff -r '", a, "' '", b, "' >'", report, "' 2>&1").c_str());
  return Slurp(report);
}

TEST_F(MpiCliTest, DumpsAreTheSingleProcesss) {
  // Without an error, over an uneven split: every write's file.
  const std::string graph = Trace(
      "fgcc", "--set tp_degree=4 --set m=32 --set k=64 --set n=64", "fgcc4.pb");
  auto run = [&](const std::string& dump) {
    return absl::StrCat("run '", graph, "' --random-inputs 1 -o '", Path("o"),
                        "' --dump '", dump, "'");
  };
  const CliResult one = RunCli(run(Path("dump1")));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const CliResult three = RunMpi(3, run(Path("dump3")));
  ASSERT_EQ(three.exit_code, 0) << three.err;
  EXPECT_EQ(three.out, absl::StrReplaceAll(one.out, {{"dump1", "dump3"}}));
  EXPECT_EQ(DiffDirs(Path("dump1"), Path("dump3"), Path("diff3.txt")), "");

  // With an error in rank 3: the files up to it and the final state, the
  // same count reported by every process.
  const std::string oob =
      WriteIndexedCopyGraph(Path("oob.pb"), /*copy_first=*/true);
  ASSERT_TRUE(
      WriteNpy(Path("idx.npy"), Ints("idx", {4, 2}, {0, 1, 2, 3, 99, 5, 6, 7}))
          .ok());
  auto failing = [&](const std::string& dump) {
    return absl::StrCat("run '", oob, "' --random-inputs 1 -i idx='",
                        Path("idx.npy"), "' -o '", Path("o"), "' --dump '",
                        dump, "'");
  };
  const CliResult one_failing = RunCli(failing(Path("fail1")));
  ASSERT_EQ(one_failing.exit_code, 1) << one_failing.err;
  ASSERT_THAT(one_failing.err, HasSubstr("final_*.npy"));
  for (int p : {2, 3}) {
    const std::string dir = absl::StrCat("fail", p);
    const CliResult r = RunMpi(p, failing(Path(dir)));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    for (int q = 0; q < p; ++q) {
      EXPECT_EQ(ProcessErr(q),
                absl::StrReplaceAll(one_failing.err, {{"fail1", dir}}))
          << "process " << q << " of " << p;
    }
    EXPECT_EQ(DiffDirs(Path("fail1"), Path(dir), Path("diff.txt")), "")
        << p << " processes";
  }
}

// The pids of `parent`'s children.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  const std::string list =
      Slurp(absl::StrCat("/proc/", parent, "/task/", parent, "/children"));
  for (absl::string_view word : absl::StrSplit(list, ' ', absl::SkipEmpty())) {
    int pid = 0;
    if (absl::SimpleAtoi(word, &pid)) children.push_back(pid);
  }
  return children;
}

// CPU seconds `pid` has used (user + system), or -1 once it is gone.
double CpuSecondsOf(pid_t pid) {
  const std::string stat = Slurp(absl::StrCat("/proc/", pid, "/stat"));
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime and stime fields 14 and 15.
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return -1;
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(name_end + 2), ' ', absl::SkipEmpty());
  int64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return -1;
  }
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

TEST_F(MpiCliTest, AKilledProcessStopsTheOthersWithinTheTimeout) {
  // Long enough to be killed in the middle: about 4 s in one process on a
  // 2.6 GHz core, so each of the two processes runs for seconds.
  const std::string graph =
      Trace("fgcc", "--set tp_degree=4 --set m=2048 --set k=2048 --set n=2048",
            "big.pb");
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    setpgid(0, 0);  // mpirun and its ranks in a group of their own
    const std::string cli = CliPath();
    const std::string out = Path("o");
    execl(NKIGRAPH_MPIEXEC, NKIGRAPH_MPIEXEC, "-np", "2", "--oversubscribe",
          cli.c_str(), "run", graph.c_str(), "--random-inputs", "1", "-o",
          out.c_str(), "--peer-timeout", "5", "--quiet",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(launcher, launcher);  // also here: either may run first
  // On any way out of this test, no process of the run is left behind to
  // hold the test's output open and load the machine for later tests. The
  // ranks are mpirun's children but not in its process group (Open MPI
  // gives them their own), so each is killed by its pid first: those found
  // below, and any mpirun has now.
  bool reaped = false;
  std::vector<pid_t> children;
  absl::Cleanup stop_the_run = [&] {
    if (reaped) return;
    for (const pid_t rank : children) kill(rank, SIGKILL);
    for (const pid_t rank : ChildrenOf(launcher)) kill(rank, SIGKILL);
    kill(-launcher, SIGKILL);
    int ignored = 0;
    waitpid(launcher, &ignored, 0);
  };
  // Wait for both processes, then kill one once it is running the graph:
  // a fixed delay is too late on a fast machine (the run has ended) and
  // too early on a slow one (still starting). The deadlines are generous:
  // under the sanitizers, on a loaded machine, starting takes seconds.
  constexpr auto kDeadline = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  while (children.size() < 2 &&
         std::chrono::steady_clock::now() - start < kDeadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    children = ChildrenOf(launcher);
  }
  ASSERT_EQ(children.size(), 2u);
  constexpr double kRunningCpuSeconds = 0.3;
  double victim_cpu = 0;
  while (std::chrono::steady_clock::now() - start < kDeadline) {
    victim_cpu = CpuSecondsOf(children[1]);
    if (victim_cpu < 0 || victim_cpu >= kRunningCpuSeconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GE(victim_cpu, kRunningCpuSeconds)
      << "the process ended or never ran the graph";
  const auto killed = std::chrono::steady_clock::now();
  kill(children[1], SIGKILL);
  // Waited for against a deadline: a survivor that hung would otherwise
  // hold the test until ctest's timeout, which kills it with no cleanup.
  int status = 0;
  pid_t waited = 0;
  while ((waited = waitpid(launcher, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - killed < kDeadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(waited, launcher) << "the run did not end after a process died";
  reaped = true;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed)
          .count();
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The survivor notices within its 5 s peer timeout; the rest is mpirun
  // taking the run down.
  EXPECT_LT(seconds, 5 + 10);
}

}  // namespace
}  // namespace nkigraph::testing
