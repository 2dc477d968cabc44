// The interpreter against the machine's BLAS, in the same run.
//
// BM_InterpTiledMatmul replays the registered tiled_matmul graph
// (2048 x 2048 x 2048: 1024 nc_matmul instructions on 128 x 128 x 512 tiles
// plus their DMAs and PSUM evacuations) and reports `ratio_vs_sgemm`: its
// Run() time over one cblas_sgemm of the same matrices (best of three),
// measured just before in the same process, and `cpu_ratio_vs_sgemm`, the
// same by process CPU time, which holds steady when other jobs share the
// machine. Both sides get the same threads (`threads`: the sgemm's BLAS
// threads, the interpreter's RunOptions::threads, which its one program
// lends to BLAS), so the ratio compares like with like.
//
// BM_TileSgemmCalls makes the nc_matmul instructions' 1,024 cblas_sgemm
// calls alone (128 x 512 x 128 tiles, dense operands, beta 0 then 1 along
// k, as the interpreter calls them) and reports them over one sgemm of the
// same size: the floor of any interpreter that hands each instruction to
// BLAS, which packs its operands again on every call.
//
// BM_TileKernelCalls makes the same 1,024 products with the interpreter's
// own kernel (ops/matmul_kernel.h), which reads the tiles where they lie,
// the moving tile in bfloat16 when `bf16`, against one sgemm of the same
// size in the same run: the floor of the interpreter's matmuls.
//
// BM_TransposingCopies makes the run's transposing DMA copies alone, on
// each code path of ops::CopyBlock in turn.
//
// BM_RowOpSplit runs streams of one row op on [128, cols] fp32 SBUF tiles
// (`op`: 0 tensor_tensor add, 1 an exp activation, 2 tensor_scalar of two
// stages, 3 tensor_reduce max over the free axis) at 1 and 2 threads in
// alternate runs, and reports their time per instruction and
// `t2_over_t1`, the medians' ratio: where two threads split an op's rows
// (ops/split_work.h's thresholds) and whether that pays each side of them.
//
// BM_InterpDispatch runs a stream of tiny tensor_tensor instructions
// ([1, 1] operands) and reports Run()'s time per instruction, wall and
// CPU (setting the interpreter up and tearing it down excluded).
//
// BM_InterpIntElementwise runs a stream of int32 tensor_tensor adds on
// [128, cols] SBUF tiles: every element loaded and stored as an integer
// (ExecContext::ReadInt, WriteInt), the interpreter's integer path.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/kernel_timing.h"
#include "builder/isa.h"
#include "builder/tracer.h"
#include "interp/interpreter.h"
#include "kernels/registry.h"
#include "ops/block_copy.h"
#include "ops/matmul_kernel.h"
#include "util/dtype.h"
#include "util/worker_pool.h"

namespace nkigraph {
namespace {

using bench::Die;

std::vector<float> RandomMatrix(int64_t elements, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> values(elements);
  for (float& v : values) v = static_cast<float>(rng() >> 40) * 0x1p-23f - 1.0f;
  return values;
}

// After a multi-threaded sgemm OpenBLAS's worker threads keep polling
// (sched_yield) for 2^28 TSC cycles, about 0.1 s at 2.6 GHz, before they
// sleep: a run measured right after the baseline would share the second
// core with them (tiled_matmul at 2 threads took 1.15-1.2x its time).
constexpr absl::Duration kBlasWorkersSettle = absl::Milliseconds(500);

// Best of three sgemm calls on BLAS's current thread count:
// C[m, n] = A[m, k] @ B[k, n] (wall and CPU each at their best). Returns
// once BLAS's worker threads have gone to sleep.
bench::Elapsed SgemmSeconds(int64_t size, const std::vector<float>& a,
                            const std::vector<float>& b) {
  std::vector<float> c(size * size);
  bench::Elapsed best{1e30, 1e30};
  for (int rep = 0; rep < 3; ++rep) {
    const bench::Stopwatch watch;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size, size,
                1.0f, a.data(), size, b.data(), size, 0.0f, c.data(), size);
    const bench::Elapsed elapsed = watch.Read();
    best.wall = std::min(best.wall, elapsed.wall);
    best.cpu = std::min(best.cpu, elapsed.cpu);
  }
  benchmark::DoNotOptimize(c.data());
  absl::SleepFor(kBlasWorkersSettle);
  return best;
}

void BM_InterpTiledMatmul(benchmark::State& state) {
  const int64_t size = state.range(0);
  const bool bf16 = state.range(1) != 0;
  const int threads = static_cast<int>(state.range(2));
  openblas_set_num_threads(threads);
  const std::string n = std::to_string(size);
  absl::StatusOr<proto::Graph> graph = kernels::KernelRegistry::Global().Trace(
      "tiled_matmul", {{"m", n},
                       {"k", n},
                       {"n", n},
                       {"bias", "0"},
                       {"dtype", bf16 ? "bfloat16" : "float32"}});
  if (!graph.ok()) Die(graph.status());

  HostArray lhs{"lhs",        proto::FLOAT32,
                {size, size}, RandomMatrix(size * size, 1),
                {},           {}};
  HostArray rhs{"rhs",        proto::FLOAT32,
                {size, size}, RandomMatrix(size * size, 2),
                {},           {}};
  const bench::Elapsed sgemm = SgemmSeconds(size, lhs.f32, rhs.f32);

  bench::Elapsed total;
  int64_t instructions = 0;
  for (auto _ : state) {
    state.PauseTiming();
    interp::RunOptions options;
    options.threads = threads;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph, options);
    if (!interp.ok()) Die(interp.status());
    if (absl::Status s = (*interp)->SetInput(lhs); !s.ok()) Die(s);
    if (absl::Status s = (*interp)->SetInput(rhs); !s.ok()) Die(s);
    state.ResumeTiming();
    const bench::Stopwatch watch;
    if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
    total += watch.Read();
    instructions = (*interp)->instructions_executed();
    state.PauseTiming();
    interp->reset();
    state.ResumeTiming();
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["sgemm_ms"] = sgemm.wall * 1e3;
  state.counters["sgemm_cpu_ms"] = sgemm.cpu * 1e3;
  state.counters["interpreter_ms"] = total.wall / runs * 1e3;
  state.counters["interpreter_cpu_ms"] = total.cpu / runs * 1e3;
  state.counters["ratio_vs_sgemm"] = total.wall / runs / sgemm.wall;
  state.counters["cpu_ratio_vs_sgemm"] = total.cpu / runs / sgemm.cpu;
  state.counters["instructions"] = static_cast<double>(instructions);
}
BENCHMARK(BM_InterpTiledMatmul)
    ->Args({2048, 0, 1})
    ->Args({2048, 1, 1})
    ->Args({2048, 0, 2})
    ->Args({2048, 1, 2})
    ->ArgNames({"size", "bf16", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

// The tiles of a 2048^3 tiled matmul as tiled_matmul makes its products:
// per (m, n) tile of [kTileM, kTileN], kTileSize / kTileK products along k.
constexpr int64_t kTileSize = 2048, kTileK = 128, kTileM = 128, kTileN = 512;
// Bytes between partitions of SBUF, as the interpreter lays it out.
constexpr int64_t kPartitionBytes = 192 * 1024;

// The tile benches' baseline: one sgemm of two random kTileSize^2
// matrices, BLAS on `threads` threads (which the tile calls then use too).
bench::Elapsed TileSgemmBaseline(int threads) {
  openblas_set_num_threads(threads);
  const std::vector<float> a = RandomMatrix(kTileSize * kTileSize, 1);
  const std::vector<float> b = RandomMatrix(kTileSize * kTileSize, 2);
  return SgemmSeconds(kTileSize, a, b);
}

// Times `product(kt)` for every k tile of every output tile into `psum`,
// and reports the rounds against `sgemm` (one sgemm of the whole matrices).
template <typename Product>
void TimeTileProducts(benchmark::State& state, const bench::Elapsed& sgemm,
                      std::vector<float>& psum, Product product) {
  bench::Elapsed total;
  for (auto _ : state) {
    const bench::Stopwatch watch;
    for (int64_t tile = 0; tile < (kTileSize / kTileN) * (kTileSize / kTileM);
         ++tile) {
      for (int64_t kt = 0; kt < kTileSize / kTileK; ++kt) product(kt);
    }
    total += watch.Read();
    benchmark::DoNotOptimize(psum.data());
  }
  const double runs = static_cast<double>(state.iterations());
  state.counters["sgemm_ms"] = sgemm.wall * 1e3;
  state.counters["tile_calls_ms"] = total.wall / runs * 1e3;
  state.counters["ratio_vs_sgemm"] = total.wall / runs / sgemm.wall;
  state.counters["cpu_ratio_vs_sgemm"] = total.cpu / runs / sgemm.cpu;
}

void BM_TileSgemmCalls(benchmark::State& state) {
  constexpr int64_t kSize = kTileSize, kK = kTileK, kM = kTileM, kN = kTileN;
  const int threads = static_cast<int>(state.range(0));
  const bench::Elapsed sgemm = TileSgemmBaseline(threads);
  // The tiles as the kernel holds them: rhs tiles [k, n] (stationary) and
  // lhs^T tiles [k, m] (moving), each dense.
  const std::vector<float> stationary = RandomMatrix(kK * kM, 3);
  const std::vector<float> moving = RandomMatrix(kSize / kK * kK * kN, 4);
  std::vector<float> psum(kM * kN);
  TimeTileProducts(state, sgemm, psum, [&](int64_t kt) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kM, kN, kK, 1.0f,
                stationary.data(), kM, &moving[kt * kK * kN], kN,
                kt == 0 ? 0.0f : 1.0f, psum.data(), kN);
  });
}
BENCHMARK(BM_TileSgemmCalls)
    ->Arg(1)
    ->Arg(2)
    ->ArgNames({"threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

void BM_TileKernelCalls(benchmark::State& state) {
  constexpr int64_t kSize = kTileSize, kK = kTileK, kM = kTileM, kN = kTileN;
  const int threads = static_cast<int>(state.range(0));
  const bool bf16 = state.range(1) != 0;
  const bench::Elapsed sgemm = TileSgemmBaseline(threads);
  // The tiles as BM_TileSgemmCalls holds them, the moving ones in bfloat16
  // when asked.
  const std::vector<float> stationary = RandomMatrix(kK * kM, 3);
  const std::vector<float> moving = RandomMatrix(kSize / kK * kK * kN, 4);
  const proto::DType dtype = bf16 ? proto::BFLOAT16 : proto::FLOAT32;
  const int64_t size = DTypeSize(dtype);
  std::vector<uint8_t> moving_bytes(moving.size() * size);
  StoreRowFromFloat(dtype, moving.data(), static_cast<int64_t>(moving.size()),
                    moving_bytes.data(), 448.0f);
  std::vector<float> psum(kM * kN);
  TimeTileProducts(state, sgemm, psum, [&](int64_t kt) {
    ops::MatmulTile(kK, kM, kN,
                    {reinterpret_cast<const uint8_t*>(stationary.data()),
                     kM * 4, proto::FLOAT32},
                    {&moving_bytes[kt * kK * kN * size], kN * size, dtype},
                    {psum.data(), kN}, /*accumulate=*/kt != 0, threads);
  });
}
BENCHMARK(BM_TileKernelCalls)
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 0})
    ->Args({2, 1})
    ->ArgNames({"threads", "bf16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

// The tile products of BM_TileKernelCalls with both operands lying as on
// chip: partition p of every tile kPartitionBytes (192 KiB) apart, plus
// `pad` bytes (0: as the interpreter lays SBUF out, where every row of a
// tile falls in the same L1 and L2 cache sets), the moving tiles of one
// m tile side by side in each partition as tiled_matmul holds lhs^T.
void BM_TileKernelCallsOnChip(benchmark::State& state) {
  constexpr int64_t kK = kTileK, kM = kTileM, kN = kTileN;
  const int64_t stride = kPartitionBytes + state.range(0);
  const bench::Elapsed sgemm = TileSgemmBaseline(1);
  // Partition p: the stationary tile's row at 0, then the 16 moving tiles'.
  std::vector<uint8_t> sbuf(kK * stride);
  const std::vector<float> values = RandomMatrix(kK * stride / 4, 3);
  std::memcpy(sbuf.data(), values.data(), sbuf.size());
  const int64_t moving_at = kM * 4;
  std::vector<float> psum(kM * kN);
  TimeTileProducts(state, sgemm, psum, [&](int64_t kt) {
    ops::MatmulTile(
        kK, kM, kN, {sbuf.data(), stride, proto::FLOAT32},
        {sbuf.data() + moving_at + kt * kN * 4, stride, proto::FLOAT32},
        {psum.data(), kN}, /*accumulate=*/kt != 0);
  });
}
BENCHMARK(BM_TileKernelCallsOnChip)
    ->Arg(0)
    ->Arg(256)
    ->ArgNames({"pad"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

// The transposing copies of one tiled_matmul 2048^3 run, as ops::CopyBlock
// makes them: per m tile of 512 rows and k tile of 128, lhs^T into rows a
// partition apart (kPartitionBytes, as on chip), and per m and n tile the
// [128, 512] output tile back through out's transposed view; each code
// path in turn in every round (`<path>_ms`: the best round), so that they
// meet the same load. `bf16`: 2-byte elements.
void BM_TransposingCopies(benchmark::State& state) {
  constexpr int64_t kSize = 2048, kK = 128, kM = 512, kN = 128;
  const int64_t esize = state.range(0) != 0 ? 2 : 4;
  std::vector<uint8_t> lhs(kSize * kSize * esize, 1);
  std::vector<uint8_t> out(kSize * kSize * esize, 0);
  std::vector<uint8_t> sbuf(kK * kPartitionBytes, 2);
  const int64_t ld = kSize * esize;
  auto one_run = [&](ops::SimdPath path) {
    for (int64_t m0 = 0; m0 < kSize; m0 += kM) {
      for (int64_t k0 = 0; k0 < kSize; k0 += kK) {
        // lhs[m tile, k tile]^T into [k partitions, m].
        ops::CopyBlock({sbuf.data() + k0 / kK * kM * esize, kK, kM,
                        kPartitionBytes, esize},
                       {lhs.data() + m0 * ld + k0 * esize, kK, kM, esize, ld},
                       esize, path);
      }
      for (int64_t n0 = 0; n0 < kSize; n0 += kN) {
        // out_t [n partitions, m] into out[m tile, n tile]^T.
        ops::CopyBlock({out.data() + m0 * ld + n0 * esize, kN, kM, esize, ld},
                       {sbuf.data(), kN, kM, kPartitionBytes, esize}, esize,
                       path);
      }
    }
  };
  const std::vector<ops::SimdPath> paths = ops::AvailableSimdPaths();
  std::vector<double> best(paths.size(), 1e30);
  for (auto _ : state) {
    for (size_t i = 0; i < paths.size(); ++i) {
      const bench::Stopwatch watch;
      one_run(paths[i]);
      best[i] = std::min(best[i], watch.Read().wall);
    }
    benchmark::DoNotOptimize(out.data());
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    state.counters[absl::StrCat(ops::SimdPathName(paths[i]), "_ms")] =
        best[i] * 1e3;
  }
}
BENCHMARK(BM_TransposingCopies)
    ->Arg(0)
    ->Arg(1)
    ->ArgNames({"bf16"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(5);

// WorkerPool's hand-off as nc_matmul's split uses it: after `gap_us` of
// the caller's own work, one batch of 8 tasks of `task_us` each on a
// 2-thread pool that blocks (spin 0) or polls `spin_us` first. Reports
// the batch's time per round (ideally 4 tasks' worth, 4 * task_us) and
// how long after Run() the helper started its first task (`helper_us`;
// the rounds it started none count as the whole batch).
void BM_PoolHandOff(benchmark::State& state) {
  const double spin_us = static_cast<double>(state.range(0));
  constexpr double kTaskUs = 10, kGapUs = 40;
  using Clock = std::chrono::steady_clock;
  auto busy = [](double us) {
    const Clock::time_point end =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double, std::micro>(us));
    while (Clock::now() < end) {
    }
  };
  WorkerPool pool(2, absl::Microseconds(spin_us));
  const std::thread::id caller = std::this_thread::get_id();
  double batch_us = 0, helper_us = 0;
  for (auto _ : state) {
    busy(kGapUs);
    const Clock::time_point start = Clock::now();
    std::atomic<int64_t> helper_start{-1};
    pool.Run(8, [&](int) {
      if (std::this_thread::get_id() != caller) {
        int64_t none = -1;
        helper_start.compare_exchange_strong(none,
                                             (Clock::now() - start).count());
      }
      busy(kTaskUs);
    });
    const double batch =
        std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    batch_us += batch;
    helper_us += helper_start < 0 ? batch
                                  : std::chrono::duration<double, std::micro>(
                                        Clock::duration(helper_start.load()))
                                        .count();
  }
  const double rounds = static_cast<double>(state.iterations());
  state.counters["batch_us"] = batch_us / rounds;
  state.counters["helper_us"] = helper_us / rounds;
  state.counters["ideal_us"] = 4 * kTaskUs;
}
BENCHMARK(BM_PoolHandOff)
    ->Arg(0)
    ->Arg(100)
    ->ArgNames({"spin_us"})
    ->Iterations(2000)
    ->UseRealTime();

// Times Run() of `graph` per executed instruction, wall and CPU (setting
// the interpreter up and tearing it down excluded).
void TimeDispatch(benchmark::State& state,
                  const absl::StatusOr<proto::Graph>& graph) {
  if (!graph.ok()) Die(graph.status());
  int64_t executed = 0;
  bench::Elapsed run;
  for (auto _ : state) {
    state.PauseTiming();
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(*graph);
    if (!interp.ok()) Die(interp.status());
    state.ResumeTiming();
    const bench::Stopwatch watch;
    if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
    run += watch.Read();
    executed += (*interp)->instructions_executed();
    // Destroying the interpreter (and its copy of the graph) is not
    // dispatch.
    state.PauseTiming();
    interp->reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(executed);
  state.counters["ns_per_instruction"] =
      run.wall * 1e9 / static_cast<double>(executed);
  state.counters["cpu_ns_per_instruction"] =
      run.cpu * 1e9 / static_cast<double>(executed);
}

// `count` tiny tensor_tensor instructions, instruction i on the [1, 1]
// element `element(tile, i)` of an SBUF tile of `tile_shape`, between a
// memset of the tile and a copy of its first element out.
absl::StatusOr<proto::Graph> TinyOpStream(
    const std::string& name, int64_t count,
    const std::vector<int64_t>& tile_shape,
    absl::FunctionRef<builder::Tensor(const builder::Tensor&, int64_t)>
        element) {
  builder::Tracer tracer(builder::TraceConfig{name, {}, {}});
  return tracer.Trace([&](builder::Tracer& t) {
    using builder::Buffer;
    namespace isa = builder::isa;
    builder::Tensor out =
        t.Allocate({1, 1}, proto::FLOAT32, Buffer::kSharedHbm, "out");
    builder::Tensor a =
        builder::ndarray(tile_shape, proto::FLOAT32, Buffer::kSbuf, "a");
    isa::memset(a, 1.0f);
    for (int64_t i = 0; i < count; ++i) {
      const builder::Tensor e = element(a, i);
      isa::tensor_tensor(e, e, e, isa::Alu::kMaximum);
    }
    isa::dma_copy(out, element(a, 0));
    t.Output("out", out);
  });
}

// Every instruction on the one element of a [1, 1] tile.
void BM_InterpDispatch(benchmark::State& state) {
  TimeDispatch(
      state, TinyOpStream("dispatch", state.range(0), {1, 1},
                          [](const builder::Tensor& a, int64_t) { return a; }));
}
BENCHMARK(BM_InterpDispatch)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The same tiny tensor_tensor instructions, each on its own element of a
// [128, 512] tile (65536 operand lists in turn, none repeating within the
// decoded stream's table of recent ones): every instruction loads decoded
// operand records of its own, as a stream over distinct tiles does.
void BM_InterpDispatchDistinct(benchmark::State& state) {
  TimeDispatch(
      state,
      TinyOpStream("dispatch_distinct", state.range(0), {128, 512},
                   [](const builder::Tensor& a, int64_t i) {
                     return a.Slice(0, (i / 512) % 128, 1).Slice(1, i % 512, 1);
                   }));
}
BENCHMARK(BM_InterpDispatchDistinct)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A stream of `count` row ops `op` (as BM_RowOpSplit numbers them) on
// [128, cols] SBUF tiles of `dtype`, alternating between two so that each
// reads what the one before wrote, after a memset of both.
absl::StatusOr<proto::Graph> RowOpStream(int64_t cols, int op, int64_t count,
                                         proto::DType dtype = proto::FLOAT32) {
  builder::Tracer tracer(builder::TraceConfig{"row_op_split", {}, {}});
  return tracer.Trace([&](builder::Tracer& t) {
    using builder::Buffer;
    namespace isa = builder::isa;
    builder::Tensor out =
        t.Allocate({128, cols}, dtype, Buffer::kSharedHbm, "out");
    builder::Tensor a =
        builder::ndarray({128, cols}, dtype, Buffer::kSbuf, "a");
    builder::Tensor b =
        builder::ndarray({128, cols}, dtype, Buffer::kSbuf, "b");
    builder::Tensor column =
        builder::ndarray({128, 1}, proto::FLOAT32, Buffer::kSbuf, "column");
    isa::memset(a, 0.5f);
    isa::memset(b, 0.25f);
    for (int64_t i = 0; i < count; ++i) {
      const builder::Tensor& dst = i % 2 == 0 ? b : a;
      const builder::Tensor& src = i % 2 == 0 ? a : b;
      switch (op) {
        case 0:
          isa::tensor_tensor(dst, src, dst, isa::Alu::kAdd);
          break;
        case 1:
          isa::activation(dst, isa::ActFunc::kExp, src, {.scale = -1.0f});
          break;
        case 2:
          isa::tensor_scalar(dst, src, isa::Alu::kMultiply, 0.5f,
                             {.op1 = isa::Alu::kAdd, .operand1 = 0.25f});
          break;
        default:
          isa::tensor_reduce(column, isa::Alu::kMaximum, src);
          break;
      }
    }
    isa::dma_copy(out, a);
    t.Output("out", out);
  });
}

// Run()'s time of `graph` at `threads` (set-up and tear-down excluded).
bench::Elapsed TimeRun(const proto::Graph& graph, int threads) {
  interp::RunOptions options;
  options.threads = threads;
  absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
      interp::Interpreter::Create(graph, options);
  if (!interp.ok()) Die(interp.status());
  const bench::Stopwatch watch;
  if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
  return watch.Read();
}

void BM_RowOpSplit(benchmark::State& state) {
  const int64_t cols = state.range(0);
  const int op = static_cast<int>(state.range(1));
  // 2^25 elements of work in all (at least 200 instructions): tens of
  // milliseconds a run at one thread.
  const int64_t count =
      std::max<int64_t>(200, (int64_t{1} << 25) / (128 * cols));
  const absl::StatusOr<proto::Graph> graph = RowOpStream(cols, op, count);
  if (!graph.ok()) Die(graph.status());
  TimeRun(*graph, 2);  // the split pool started, the pages touched once
  std::vector<double> t1, t2;
  for (auto _ : state) {
    t1.push_back(TimeRun(*graph, 1).wall);
    t2.push_back(TimeRun(*graph, 2).wall);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double per_instr = 1e6 / static_cast<double>(count + 3);
  state.counters["elements"] = static_cast<double>(128 * cols);
  state.counters["t1_us_per_instr"] = median(t1) * per_instr;
  state.counters["t2_us_per_instr"] = median(t2) * per_instr;
  state.counters["t2_over_t1"] = median(t2) / median(t1);
}
BENCHMARK(BM_RowOpSplit)
    ->ArgsProduct({{64, 128, 256, 512, 1024, 2048, 4096}, {0, 1, 2, 3}})
    ->ArgNames({"cols", "op"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(7);

void BM_InterpIntElementwise(benchmark::State& state) {
  TimeDispatch(state, RowOpStream(state.range(0), 0, 200, proto::INT32));
}
BENCHMARK(BM_InterpIntElementwise)
    ->Arg(512)
    ->ArgNames({"cols"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace nkigraph

BENCHMARK_MAIN();
