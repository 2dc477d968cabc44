#ifndef NKIGRAPH_INTERP_REMOTE_MEMBER_H_
#define NKIGRAPH_INTERP_REMOTE_MEMBER_H_

// A collective whose replica group spans processes runs in every process
// that holds one of its members, each executing the op's execute_group
// over the whole group: its own members are their ProgramStates, the
// others RemoteMembers that serve what their owners read and drop what the
// op writes to them (their owners write it). Every process therefore
// computes the same values in the same order (a reduction in group order,
// in fp32) as one process would.
//
// What travels is a member's contribution: the outcome of binding its
// instruction, and for every operand the op reads, its raw element bytes
// or the error reading them gave, so a read that fails in the owner fails
// at the same point everywhere.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "interp/program_state.h"
#include "interp/round_wire.h"
#include "ops/exec_context.h"
#include "ops/instr_view.h"

namespace nkigraph::interp {

struct MemberContribution {
  absl::Status bind;
  std::vector<absl::Status> read;  // per operand: its read's outcome
  std::vector<std::string> raw;    // per operand: its element bytes
};

// Binds `p` at its current instruction and reads every operand the op
// reads (as ReadRaw), appending the contribution to `out`. Returns Bind's
// outcome.
absl::Status WriteContribution(ProgramState& p, WireWriter& out);
// Reads a contribution written by WriteContribution.
MemberContribution ReadContribution(WireReader& in);

class RemoteMember : public ops::ExecContext {
 public:
  // `view` is the instruction as a local member of the same group sees it
  // (collectives join the same instruction of the same core on every rank,
  // so it is this member's too).
  RemoteMember(const ops::InstrView& view, int rank, int core,
               const MemberContribution& contribution)
      : view_(view), rank_(rank), core_(core), contribution_(contribution) {}

  const ops::InstrView& view() const override { return view_; }
  int rank() const override { return rank_; }
  int core() const override { return core_; }
  absl::StatusOr<absl::Span<const float>> ReadFloat(int i) override;
  absl::StatusOr<absl::Span<const int64_t>> ReadInt(int i) override;
  absl::StatusOr<absl::Span<const uint8_t>> ReadRaw(int i) override;
  absl::StatusOr<Rows> ReadRows(int i) override;
  MatmulRows MatmulInPlace(int, bool) override { return {}; }
  MutableRows WriteFloatInPlace(int) override { return {}; }
  absl::Status WriteFloat(int, absl::Span<const float>) override {
    return absl::OkStatus();
  }
  absl::Status WriteInt(int, absl::Span<const int64_t>) override {
    return absl::OkStatus();
  }
  absl::Status WriteRaw(int, absl::Span<const uint8_t>) override {
    return absl::OkStatus();
  }
  absl::Status WriteRawRows(int, const Rows&) override {
    return absl::OkStatus();
  }
  absl::Status MatmulWrite(int, absl::Span<const float>, bool) override {
    return absl::OkStatus();
  }
  absl::Span<float> ReduceRegisters(ops::Engine) override {
    return absl::MakeSpan(registers_);
  }
  std::vector<float>& ScratchFloat(int slot) override {
    return scratch_float_[slot];
  }
  std::vector<int64_t>& ScratchInt(int slot) override {
    return scratch_int_[slot];
  }

 private:
  absl::StatusOr<absl::Span<const uint8_t>> Raw(int i) const;

  const ops::InstrView& view_;
  const int rank_;
  const int core_;
  const MemberContribution& contribution_;
  std::array<std::vector<float>, ops::kMaxOperands> floats_;
  std::array<std::vector<int64_t>, ops::kMaxOperands> ints_;
  std::array<std::vector<float>, 4> scratch_float_;
  std::array<std::vector<int64_t>, 4> scratch_int_;
  std::array<float, 128> registers_{};
};

// Forwards every call to `inner`, numbering the calls of one group's
// execution across all its members (`counter`); the first call that fails
// records its number in `first_failure`. Processes executing the same
// group see their own members' write errors only; the failure with the
// lowest number is the one a single process meets first. With `stop_at`
// set, call number `stop_at` fails instead of being forwarded, so that the
// execution ends where another process's member failed.
class CountingContext : public ops::ExecContext {
 public:
  CountingContext(ops::ExecContext& inner, int64_t& counter,
                  int64_t& first_failure, int64_t stop_at = -1)
      : inner_(inner),
        counter_(counter),
        first_failure_(first_failure),
        stop_at_(stop_at) {}

  const ops::InstrView& view() const override { return inner_.view(); }
  int rank() const override { return inner_.rank(); }
  int core() const override { return inner_.core(); }
  absl::StatusOr<absl::Span<const float>> ReadFloat(int i) override {
    return Note([&] { return inner_.ReadFloat(i); });
  }
  absl::StatusOr<absl::Span<const int64_t>> ReadInt(int i) override {
    return Note([&] { return inner_.ReadInt(i); });
  }
  absl::StatusOr<absl::Span<const uint8_t>> ReadRaw(int i) override {
    return Note([&] { return inner_.ReadRaw(i); });
  }
  absl::StatusOr<Rows> ReadRows(int i) override {
    return Note([&] { return inner_.ReadRows(i); });
  }
  MatmulRows MatmulInPlace(int i, bool accumulate) override {
    ++counter_;
    return inner_.MatmulInPlace(i, accumulate);
  }
  MutableRows WriteFloatInPlace(int i) override {
    ++counter_;
    return inner_.WriteFloatInPlace(i);
  }
  absl::Status WriteFloat(int i, absl::Span<const float> values) override {
    return Note([&] { return inner_.WriteFloat(i, values); });
  }
  absl::Status WriteInt(int i, absl::Span<const int64_t> values) override {
    return Note([&] { return inner_.WriteInt(i, values); });
  }
  absl::Status WriteRaw(int i, absl::Span<const uint8_t> bytes) override {
    return Note([&] { return inner_.WriteRaw(i, bytes); });
  }
  absl::Status WriteRawRows(int i, const Rows& rows) override {
    return Note([&] { return inner_.WriteRawRows(i, rows); });
  }
  absl::Status MatmulWrite(int i, absl::Span<const float> values,
                           bool accumulate) override {
    return Note([&] { return inner_.MatmulWrite(i, values, accumulate); });
  }
  absl::Span<float> ReduceRegisters(ops::Engine engine) override {
    return inner_.ReduceRegisters(engine);
  }
  std::vector<float>& ScratchFloat(int slot) override {
    return inner_.ScratchFloat(slot);
  }
  std::vector<int64_t>& ScratchInt(int slot) override {
    return inner_.ScratchInt(slot);
  }

 private:
  template <typename Call>
  auto Note(Call&& call) -> decltype(call()) {
    const int64_t number = counter_++;
    if (number == stop_at_) {
      if (first_failure_ < 0) first_failure_ = number;
      return absl::CancelledError(
          "stopped where another process's member failed");
    }
    auto result = call();
    if (!StatusOf(result).ok() && first_failure_ < 0) first_failure_ = number;
    return result;
  }
  static const absl::Status& StatusOf(const absl::Status& s) { return s; }
  template <typename V>
  static absl::Status StatusOf(const absl::StatusOr<V>& s) {
    return s.status();
  }

  ops::ExecContext& inner_;
  int64_t& counter_;
  int64_t& first_failure_;
  const int64_t stop_at_;
};

}  // namespace nkigraph::interp

#endif  // NKIGRAPH_INTERP_REMOTE_MEMBER_H_
