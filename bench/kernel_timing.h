// Timing a registered kernel in the interpreter against its plain C++
// reference, both measured in the same process so that the ratio, not the
// absolute time, is the figure: the development machine is shared and its
// load moves wall times by tens of percent between runs.
//
// Header-only on purpose: each benchmark program is one translation unit
// and already links everything this needs, so a helper library would be
// build wiring with nothing to share.
#ifndef NKIGRAPH_BENCH_KERNEL_TIMING_H_
#define NKIGRAPH_BENCH_KERNEL_TIMING_H_

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "interp/interpreter.h"
#include "kernels/compare.h"
#include "kernels/device.h"
#include "kernels/registry.h"
#include "proto/nkigraph.pb.h"
#include "util/dtype.h"
#include "util/host_array.h"
#include "util/tensor_roles.h"

namespace nkigraph::bench {

using Settings = std::vector<std::pair<std::string, std::string>>;
// Makes a kernel's inputs from its parameters and a seed, as
// KernelDef::make_inputs does: a benchmark's own choice of inputs (a
// realistic routing, say) in its place.
using InputMaker = std::function<absl::StatusOr<std::vector<HostArray>>(
    const kernels::ParamValues&, uint64_t seed)>;

[[noreturn]] inline void Die(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  std::abort();
}

// Wall and process CPU seconds of one stretch of work. Both sides run on
// one thread (BLAS included), so CPU time is the work done and the CPU
// ratio holds steady when other jobs take the processor away; wall time is
// what a user waits.
struct Elapsed {
  double wall = 0;
  double cpu = 0;

  Elapsed& operator+=(const Elapsed& other) {
    wall += other.wall;
    cpu += other.cpu;
    return *this;
  }
};

class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(CpuSeconds()) {}
  Elapsed Read() const {
    return {
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_)
            .count(),
        CpuSeconds() - cpu_};
  }

 private:
  static double CpuSeconds() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) +
           static_cast<double>(t.tv_nsec) * 1e-9;
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

// A traced kernel with the inputs both sides run on.
struct KernelCase {
  const kernels::KernelDef* def = nullptr;
  kernels::ParamValues values;
  proto::Graph graph;
  Elapsed trace;
  int64_t instructions = 0;  // in the graph, all streams
  std::vector<HostArray> inputs;
};

// Inputs `make` (by default the kernel's make_inputs) provides (indices
// and routing tables must be valid, checkpoints consistent), then for every
// other input whole numbers uniform in its declared value range (a mask,
// an index) or else uniform [-1, 1) values, rounded to the dtype. The
// random stream is seeded as before make_inputs existed here, so figures
// of kernels without it stay comparable across revisions.
inline std::vector<HostArray> MakeInputs(const kernels::KernelDef& def,
                                         const kernels::ParamValues& values,
                                         const proto::Graph& graph,
                                         const InputMaker& make = nullptr) {
  std::vector<HostArray> inputs;
  const InputMaker& maker = make ? make : def.make_inputs;
  if (maker) {
    absl::StatusOr<std::vector<HostArray>> made = maker(values, 7);
    if (!made.ok()) Die(made.status());
    inputs = *std::move(made);
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const proto::Tensor& t : graph.tensors()) {
    if (!IsHostInput(t)) continue;
    bool made = false;
    for (const HostArray& a : inputs) made |= a.name == t.name();
    if (made) continue;
    HostArray a;
    a.name = t.name();
    a.shape.assign(t.shape().begin(), t.shape().end());
    const int64_t n = a.num_elements();
    if (t.has_value_range()) {
      std::uniform_int_distribution<int64_t> whole(t.value_range().lo(),
                                                   t.value_range().hi());
      if (IsFloatDType(t.dtype())) {
        for (int64_t e = 0; e < n; ++e) {
          a.f32.push_back(static_cast<float>(whole(rng)));
        }
      } else {
        a.dtype = proto::INT32;
        for (int64_t e = 0; e < n; ++e) {
          a.i32.push_back(static_cast<int32_t>(whole(rng)));
        }
      }
    } else {
      a.f32.resize(n);
      for (float& v : a.f32) v = kernels::RoundLikeDevice(t.dtype(), dist(rng));
    }
    inputs.push_back(std::move(a));
  }
  return inputs;
}

// Traces `kernel` (timed) and makes its inputs (MakeInputs).
inline KernelCase PrepareKernel(const std::string& kernel,
                                const Settings& settings,
                                const InputMaker& make = nullptr) {
  const kernels::KernelRegistry& registry = kernels::KernelRegistry::Global();
  KernelCase c;
  c.def = registry.Find(kernel);
  if (c.def == nullptr) Die(absl::NotFoundError(kernel));
  absl::StatusOr<kernels::ParamValues> values =
      registry.ParseParams(*c.def, settings);
  if (!values.ok()) Die(values.status());
  c.values = *std::move(values);
  const Stopwatch watch;
  absl::StatusOr<proto::Graph> graph = registry.Trace(kernel, settings);
  c.trace = watch.Read();
  if (!graph.ok()) Die(graph.status());
  c.graph = *std::move(graph);
  for (const proto::Stream& stream : c.graph.streams()) {
    c.instructions += stream.instructions_size();
  }
  c.inputs = MakeInputs(*c.def, c.values, c.graph, make);
  return c;
}

// The mean time of `calls` calls of the kernel's reference on the case's
// inputs (as many as the interpreter runs, so that both sides average out
// the machine's load alike); the outputs go to `want`.
inline Elapsed TimeReference(const KernelCase& c, int64_t calls,
                             std::vector<HostArray>* want) {
  Elapsed total;
  for (int64_t i = 0; i < calls; ++i) {
    const Stopwatch watch;
    absl::StatusOr<std::vector<HostArray>> outputs =
        c.def->reference(c.values, c.inputs);
    total += watch.Read();
    if (!outputs.ok()) Die(outputs.status());
    *want = *std::move(outputs);
  }
  const double n = static_cast<double>(calls);
  return {total.wall / n, total.cpu / n};
}

// The largest error of the interpreter's outputs by the kernel's measure
// (KernelDef::comparison, kernels/compare.h: what its tolerance bounds);
// `*failures` counts the elements outside the tolerance (the
// development default 1e-4 for kernels without one). A ratio against a
// reference means nothing if the two did not compute the same thing, so
// the benchmarks check it once; per-output figures go to `report`.
inline double MaxError(const KernelCase& c, const interp::Interpreter& interp,
                       const std::vector<HostArray>& want, int64_t* failures,
                       std::string* report) {
  double worst = 0;
  *failures = 0;
  for (const HostArray& w : want) {
    absl::StatusOr<HostArray> got = interp.GetOutput(w.name);
    if (!got.ok()) Die(got.status());
    absl::StatusOr<kernels::OutputComparison> compared =
        kernels::CompareOutput(*got, w, c.def->comparison,
                               kernels::ToleranceOf(*c.def, c.values, w.name));
    if (!compared.ok()) Die(compared.status());
    *failures += compared->failures;
    *report += "  " + w.name + ": max |error| " +
               std::to_string(compared->max_abs_error) + ", scale " +
               std::to_string(compared->scale) + ", max " +
               std::string(kernels::ComparisonMeasure(c.def->comparison)) +
               " " + std::to_string(compared->error) + "\n";
    if (std::isnan(compared->error)) return compared->error;
    worst = std::max(worst, compared->error);
  }
  return worst;
}

// Traces `kernel`, times its reference and the interpreter's Run() once
// per iteration each (validation, device allocation and input loading
// excluded) and reports `ratio_vs_reference`: mean Run() wall time over the
// reference's, and `cpu_ratio_vs_reference`, the same by CPU time.
// BLAS runs single-threaded, as the reference does. `make`, if given,
// makes the inputs in place of the kernel's make_inputs.
//
// A graph the interpreter refuses for memory (its memory_limit) is not a
// failure of the benchmark: the run is marked skipped with the
// interpreter's message, the trace and reference figures having gone to
// stderr.
//
// `baseline`, if given, is the same math written as plain optimised loops
// (a vectorised fp32 implementation, not a reference for correctness): it
// is timed the same way and `ratio_vs_baseline` /
// `cpu_ratio_vs_baseline` say how far the interpreter is from the
// machine doing the work directly.
//
// `threads` is the run's thread count (RunOptions::threads; 0: the
// machine's), which one program lends to its big instructions.
using Baseline = std::function<void(const KernelCase&)>;

inline void RunAgainstReference(benchmark::State& state,
                                const std::string& kernel,
                                const Settings& settings,
                                const InputMaker& make = nullptr,
                                const Baseline& baseline = nullptr,
                                int threads = 0) {
  openblas_set_num_threads(1);
  const KernelCase c = PrepareKernel(kernel, settings, make);
  Elapsed loop;
  if (baseline) {
    const int64_t calls = std::max<int64_t>(1, state.max_iterations);
    for (int64_t i = 0; i < calls; ++i) {
      const Stopwatch watch;
      baseline(c);
      loop += watch.Read();
    }
    loop.wall /= static_cast<double>(calls);
    loop.cpu /= static_cast<double>(calls);
    state.counters["baseline_ms"] = loop.wall * 1e3;
    state.counters["baseline_cpu_ms"] = loop.cpu * 1e3;
  }
  std::vector<HostArray> want;
  const Elapsed reference =
      TimeReference(c, std::max<int64_t>(1, state.max_iterations), &want);
  state.counters["trace_ms"] = c.trace.wall * 1e3;
  state.counters["instructions"] = static_cast<double>(c.instructions);
  state.counters["reference_ms"] = reference.wall * 1e3;
  state.counters["reference_cpu_ms"] = reference.cpu * 1e3;
  // Also on stderr now: for the big kernels each phase takes minutes, and
  // these figures stand even if the interpreter refuses the graph.
  std::fprintf(stderr,
               "%s: trace %.0f ms, %lld instructions, reference %.0f ms "
               "(%.0f ms CPU)\n",
               kernel.c_str(), c.trace.wall * 1e3,
               static_cast<long long>(c.instructions), reference.wall * 1e3,
               reference.cpu * 1e3);

  Elapsed total;
  int64_t runs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    interp::RunOptions options;
    options.threads = threads;
    absl::StatusOr<std::unique_ptr<interp::Interpreter>> interp =
        interp::Interpreter::Create(c.graph, options);
    if (absl::IsResourceExhausted(interp.status())) {
      state.SkipWithError(std::string(interp.status().message()).c_str());
      break;
    }
    if (!interp.ok()) Die(interp.status());
    for (const HostArray& input : c.inputs) {
      if (absl::Status s = (*interp)->SetInput(input); !s.ok()) Die(s);
    }
    state.ResumeTiming();
    const Stopwatch watch;
    if (absl::Status s = (*interp)->Run(); !s.ok()) Die(s);
    total += watch.Read();
    state.PauseTiming();
    if (runs++ == 0) {
      // Reported, not fatal: the times are still what they are, and a
      // multi-minute run should not be thrown away over it.
      std::string report;
      int64_t failures = 0;
      const double error = MaxError(c, **interp, want, &failures, &report);
      state.counters["max_error"] = error;
      if (c.def->tolerance && failures > 0) {
        std::fprintf(
            stderr,
            "%s: MISMATCH: %lld elements outside the tolerance: "
            "max %s %g (tolerance %g)\n%s",
            kernel.c_str(), static_cast<long long>(failures),
            std::string(kernels::ComparisonMeasure(c.def->comparison)).c_str(),
            error, c.def->tolerance(c.values), report.c_str());
      }
    }
    interp->reset();
    state.ResumeTiming();
  }
  if (runs > 0) {
    const double n = static_cast<double>(runs);
    state.counters["interpreter_ms"] = total.wall / n * 1e3;
    state.counters["interpreter_cpu_ms"] = total.cpu / n * 1e3;
    state.counters["ratio_vs_reference"] = total.wall / n / reference.wall;
    state.counters["cpu_ratio_vs_reference"] = total.cpu / n / reference.cpu;
    if (baseline) {
      state.counters["ratio_vs_baseline"] = total.wall / n / loop.wall;
      state.counters["cpu_ratio_vs_baseline"] = total.cpu / n / loop.cpu;
    }
  }
}

}  // namespace nkigraph::bench

#endif  // NKIGRAPH_BENCH_KERNEL_TIMING_H_
