#ifndef NKIGRAPH_BUILDER_JIT_H_
#define NKIGRAPH_BUILDER_JIT_H_

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "builder/tracer.h"

namespace nkigraph::builder {

template <typename Fn>
class JitKernel;

template <typename T>
struct IsJitKernel : std::false_type {};
template <typename Fn>
struct IsJitKernel<JitKernel<Fn>> : std::true_type {};

// A kernel wrapped for tracing. Called while a trace is active, it is
// inlined into the current graph under a scope named after the kernel (no
// nested trace, no second graph). A kernel that calls itself, or a kernel
// wrapped twice, records a clear error instead of recursing; the error
// names the kernel source line where the kernel was wrapped by jit.
//
// To trace a kernel into a graph, run it inside Tracer::Trace, or wrap a
// composer (a plain function calling jit kernels) the same way: its C++
// loops unroll into the one graph.
template <typename Fn>
class JitKernel {
 public:
  JitKernel(std::string name, Fn fn, Loc loc = Loc::current())
      : state_(std::make_shared<State>(
            State{std::move(name), std::move(fn), loc})) {}

  const std::string& name() const { return state_->name; }

  template <typename... Args>
  auto operator()(Args&&... args) const {
    using Result = std::invoke_result_t<const Fn&, Args...>;
    Tracer* tracer = Tracer::Current();
    if constexpr (IsJitKernel<Fn>::value) {
      if (tracer != nullptr) {
        tracer->RecordError(
            absl::StrCat("kernel '", state_->fn.name(),
                         "' is wrapped by jit twice (as '", state_->name,
                         "'); wrap a kernel once"),
            state_->loc);
      }
      return Result();
    } else {
      if (tracer == nullptr ||
          !tracer->EnterKernel(state_.get(), state_->name, state_->loc)) {
        return Result();
      }
      struct Exit {
        Tracer* tracer;
        ~Exit() { tracer->ExitKernel(); }
      } exit{tracer};
      return state_->fn(std::forward<Args>(args)...);
    }
  }

 private:
  struct State {
    std::string name;
    Fn fn;
    Loc loc;  // where the kernel was wrapped, for errors about it
  };
  std::shared_ptr<const State> state_;
};

template <typename Fn>
JitKernel<std::decay_t<Fn>> jit(std::string name, Fn&& fn,
                                Loc loc = Loc::current()) {
  return JitKernel<std::decay_t<Fn>>(std::move(name), std::forward<Fn>(fn),
                                     loc);
}

}  // namespace nkigraph::builder

#endif  // NKIGRAPH_BUILDER_JIT_H_
