#ifndef NKIGRAPH_INTERP_PROGRAM_STATE_H_
#define NKIGRAPH_INTERP_PROGRAM_STATE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/regions.h"
#include "interp/device_memory.h"
#include "interp/race_detector.h"
#include "interp/race_scope.h"
#include "ops/decoded_stream.h"
#include "ops/exec_context.h"
#include "ops/instr_view.h"
#include "proto/nkigraph.pb.h"

namespace nkigraph::interp {

// One program (rank, core): its position in its stream, its engines'
// accumulation registers, and the ExecContext its instructions execute
// against. Every operand access goes through Walk, which enforces bounds of
// dynamic offsets, initialisation, PSUM accumulation groups and races.
// Defined over program_state.cc (state and checks), program_state_walk.h,
// program_state_reads.cc, program_state_writes.cc,
// program_state_in_place.cc and program_state_blocks.cc.
class ProgramState : public ops::ExecContext {
 public:
  // `race_scopes` (from ComputeRaceScopes, by tensor id - 1) says which
  // shared tensors the race detector must follow; `decoded` is the core's
  // stream decoded.
  ProgramState(const proto::Graph& graph, const ops::DecodedStream& decoded,
               DeviceMemory& memory, RaceDetector& race,
               const std::vector<RaceScope>& race_scopes, int rank, int core);

  // Where to record the elements this program's dynamically offset
  // operands reach (nullptr: nowhere); the cost model's `run --timeline`.
  void set_resolved_sink(graph::ResolvedOffsets* sink) { resolved_ = sink; }

  void Advance() {
    ++pc_;
    // One writer (the thread running this program); progress reports read
    // it from another thread.
    executed_.store(executed_.load(std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);
  }
  bool done() const { return pc_ >= stream_->instructions_size(); }
  // The position of the current instruction in the stream.
  int pc() const { return pc_; }
  // Instructions executed since construction; safe to read from any thread.
  int64_t executed() const { return executed_.load(std::memory_order_relaxed); }
  const proto::Instruction& current() const {
    return stream_->instructions(pc_);
  }
  // The current instruction's op, from the decoded stream (reading the
  // instruction's opcode would touch its message, cold in a long stream).
  const ops::OpDef& current_def() const { return decoded_.def(pc_); }

  // Prepares to execute `instr` (resolves its operands, clears
  // per-instruction state); the current instruction binds from the
  // decoded stream.
  absl::Status Bind(const proto::Instruction& instr) {
    any_skipped_ = false;
    if (&instr == &current()) {
      decoded_.Bind(pc_, &view_);
      return absl::OkStatus();
    }
    return BindOther(instr);
  }

  // ops::ExecContext
  const ops::InstrView& view() const override { return view_; }
  int rank() const override { return rank_; }
  int core() const override { return core_; }
  absl::StatusOr<absl::Span<const float>> ReadFloat(int i) override;
  absl::StatusOr<absl::Span<const int64_t>> ReadInt(int i) override;
  absl::StatusOr<absl::Span<const uint8_t>> ReadRaw(int i) override;
  absl::StatusOr<Rows> ReadRows(int i) override;
  absl::StatusOr<ops::ConstBlock> ReadBlock(int i) override;
  ops::MutableBlock WriteBlockInPlace(int i, int64_t cols) override;
  MatmulRows MatmulInPlace(int i, bool accumulate) override;
  MutableRows WriteFloatInPlace(int i) override;
  absl::Status ElementwiseInPlace(int dst, std::initializer_list<int> srcs,
                                  ElementwiseRows* rows) override;
  absl::Status WriteFloat(int i, absl::Span<const float> values) override;
  absl::Status WriteInt(int i, absl::Span<const int64_t> values) override;
  absl::Status WriteRaw(int i, absl::Span<const uint8_t> bytes) override;
  absl::Status WriteRawRows(int i, const Rows& rows) override;
  absl::Status MatmulWrite(int i, absl::Span<const float> values,
                           bool accumulate) override;
  absl::Span<float> ReduceRegisters(ops::Engine engine) override;
  std::vector<float>& ScratchFloat(int slot) override;
  std::vector<int64_t>& ScratchInt(int slot) override;

 private:
  // A run of equally spaced elements of one operand.
  struct Run {
    int64_t position;  // index of the first element in operand order
    int64_t count;
    int64_t flat;  // the first element's flat index in the tensor
    int64_t flat_stride;
    int64_t byte;  // the first element's byte offset in its region
    int64_t byte_stride;
  };

  // Operand `i` as `rows` runs of `cols` contiguous elements in its
  // region, the first at byte `byte`, `stride` bytes apart; false when it
  // is not one (dynamic offset, strided elements, uneven rows).
  struct RowLayout {
    int64_t rows;
    int64_t cols;
    int64_t byte;
    int64_t stride;
    int64_t flat;         // the first element's flat index
    int64_t flat_stride;  // flat elements from one row to the next
  };
  bool LayoutAsRows(int i, RowLayout* layout) const;
  // Bind for an instruction other than the current one (from its message).
  absl::Status BindOther(const proto::Instruction& instr);
  // Operand `i` as a block (ExecContext::ReadBlock): its shape and
  // strides, and the byte offset of its first element in its region
  // (block->data unset); false when it is not one. In
  // program_state_blocks.cc, with ReadBlock and WriteBlockInPlace.
  bool LayoutAsBlock(int i, int64_t* byte, ops::ConstBlock* block) const;
  // The checks ReadRows makes of `op`, which lies in rows from byte
  // `first` of `region`, `stride` bytes apart.
  absl::Status CheckRowsReadable(const ops::OperandInfo& op,
                                 const Region& region, int64_t first,
                                 int64_t stride);
  // The checks ReadRaw makes of operand `i`, without reading it.
  absl::Status CheckReadable(int i);
  // Marks every byte static operand `i` covers written, as WriteRaw would.
  void MarkWritten(int i);

  // The shadow bytes a static operand touches do not depend on the order
  // its elements are walked in, so for shadow work on a strided operand
  // (a transposing DMA) its dims are visited by decreasing stride, which
  // turns per-element marks and checks into runs. Calls fn(byte, length)
  // for each run; false (nothing called) for operands with a dynamic
  // offset.
  template <typename Fn>
  bool ForEachSortedRun(int i, Fn&& fn) const;
  // Whether static operand `i` is strided in its innermost dim, with every
  // byte it reads initialised (the per-element checks can be skipped).
  bool StridedAndInitialized(int i) const;
  // Whether a write to operand `i` cannot fail part way (no dynamic
  // offset, no race tracking), so its shadow can be marked after the data.
  bool WriteCannotFail(int i) const;

  template <typename RunFn>
  absl::Status Walk(int i, RunFn&& fn);
  // Walks operand `i` for a read: every run checked initialised and for
  // races, then fn(tensor, region, run).
  template <typename RunFn>
  absl::Status ReadWalk(int i, RunFn&& fn);
  // Walks operand `i` for a write: store_run(dtype, dst, position, n) for
  // contiguous runs, store_one(dtype, dst, position) per element otherwise;
  // positions dropped by an OOB_SKIP offset are not written.
  template <typename StoreRun, typename StoreOne>
  absl::Status WriteWalk(int i, StoreRun&& store_run, StoreOne&& store_one);
  absl::StatusOr<int64_t> ReadIndex(uint32_t tensor_id, int64_t flat);
  // `esize`: the tensor's element size.
  absl::Status CheckInitialized(const proto::Tensor& t, const Region& region,
                                const Run& run, int64_t esize);
  absl::Status CheckRace(const proto::Tensor& t, const Run& run, bool write);
  // Whether CheckRace looks at accesses of `t` at all (only shared HBM,
  // when the detector runs): inline, so on-chip operands skip the call.
  bool RaceChecked(const proto::Tensor& t) const {
    return race_.enabled() && t.space() == proto::SHARED_HBM;
  }
  void MarkSkipped(int64_t position, int64_t count);
  // Widens the recorded reach of operand `i` to the flat elements [lo, hi].
  void RecordReach(int i, int64_t lo, int64_t hi);
  // Positions past the last one marked were not skipped (skipped_ only
  // grows as far as MarkSkipped needs).
  bool Skipped(int64_t position) const {
    return any_skipped_ && position < static_cast<int64_t>(skipped_.size()) &&
           skipped_[position];
  }
  absl::Status AccessError(absl::string_view what, const proto::Tensor& t,
                           int64_t flat) const;

  const proto::Graph& graph_;
  const proto::Stream* stream_;
  const ops::DecodedStream& decoded_;
  DeviceMemory& memory_;
  RaceDetector& race_;
  const std::vector<RaceScope>& race_scopes_;
  const int rank_;
  const int core_;
  int pc_ = 0;
  std::atomic<int64_t> executed_{0};
  float fp8_max_;

  graph::ResolvedOffsets* resolved_ = nullptr;
  ops::InstrView view_;
  bool any_skipped_ = false;
  // Set while walking an operand whose reads are known initialised, or
  // whose writes are marked after the walk (see ForEachSortedRun).
  bool skip_init_checks_ = false;
  bool defer_marks_ = false;
  std::vector<uint8_t> skipped_;
  std::array<std::vector<float>, ops::kMaxOperands> floats_;
  std::array<std::vector<int64_t>, ops::kMaxOperands> ints_;
  std::array<std::vector<uint8_t>, ops::kMaxOperands> raws_;
  std::array<std::vector<float>, 4> scratch_float_;
  std::array<std::vector<int64_t>, 4> scratch_int_;
  std::array<std::array<float, 128>, 8> reduce_registers_{};
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_PROGRAM_STATE_H_
