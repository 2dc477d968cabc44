// The tracer fills one message per opcode and overwrites it for the next
// instruction of that opcode. Whatever an instruction leaves behind (more
// operands, a dynamic offset, a view dtype, more attributes, a longer int
// list, another value type under the same attribute) must not reach the
// next: each instruction must come out as it does when it is the first of
// its opcode in a trace. And a stream that outgrows its buffer many times
// must keep every byte.
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "builder/isa.h"
#include "builder/page_prefaulter.h"
#include "builder/stream_buffer.h"
#include "builder/tracer.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace nkigraph {
namespace {

using builder::Buffer;
using builder::Tensor;
using builder::Tracer;
namespace isa = builder::isa;
using google::protobuf::util::MessageDifferencer;
using testing::Trace1;

struct Tiles {
  Tensor in, a, b, col, idx;
};

// The same tensors, in the same order, in every trace below.
Tiles Declare(Tracer& t) {
  Tiles x;
  x.in = t.Input("in", {128, 64}, proto::FLOAT32);
  x.idx = t.Input("idx", {128, 1}, proto::INT32);
  x.a = t.Allocate({128, 64}, proto::FLOAT32, Buffer::kSbuf, "a");
  x.b = t.Allocate({128, 64}, proto::FLOAT32, Buffer::kSbuf, "b");
  x.col = t.Allocate({128, 1}, proto::FLOAT32, Buffer::kSbuf, "col");
  return x;
}

// Pairs of calls of one opcode: the first has more than the second.
using Emit = std::function<void(const Tiles&)>;
struct Case {
  const char* name;
  Emit rich;   // traced first
  Emit plain;  // traced second: must not inherit anything of `rich`
};

std::vector<Case> Cases() {
  return {
      {"tensor_scalar loses op1, its vector operand and attributes",
       [](const Tiles& x) {
         isa::tensor_scalar(x.b, x.a, isa::Alu::kMultiply, x.col,
                            {.reverse0 = true,
                             .op1 = isa::Alu::kAdd,
                             .operand1 = 2.5f,
                             .reverse1 = true});
       },
       [](const Tiles& x) {
         isa::tensor_scalar(x.b, x.a, isa::Alu::kAdd, 1.0f);
       }},
      {"activation's vector bias and scale become immediates",
       [](const Tiles& x) {
         isa::activation(x.b, isa::ActFunc::kExp, x.a,
                         {.bias = x.col, .scale = x.col});
       },
       [](const Tiles& x) {
         isa::activation(x.b, isa::ActFunc::kTanh, x.a,
                         {.bias = 0.5f, .scale = 3.0f});
       }},
      {"dma_copy loses a vector offset and a view dtype",
       [](const Tiles& x) {
         isa::dma_copy(x.a.Bitcast(proto::INT32),
                       x.in.WithVectorOffset(x.idx, 0).Bitcast(proto::INT32));
       },
       [](const Tiles& x) {
         isa::dma_copy(x.b.Slice(1, 0, 32), x.in.Slice(1, 0, 32));
       }},
      {"iota's pattern list shrinks",
       [](const Tiles& x) {
         isa::iota(x.a.Bitcast(proto::INT32), {{1, 4}, {4, 16}}, 7, 3);
       },
       [](const Tiles& x) {
         isa::iota(x.b.Bitcast(proto::INT32).Slice(1, 0, 8), {{1, 8}});
       }},
  };
}

const proto::Instruction& Last(const proto::Graph& graph) {
  const proto::Stream& stream = graph.streams(0);
  return stream.instructions(stream.instructions_size() - 1);
}

TEST(TraceReuseTest, AnInstructionKeepsNothingOfTheLastOfItsOpcode) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    // After the rich call of the same opcode, and alone (a memset before
    // it, so its id and position are the same).
    absl::StatusOr<proto::Graph> reused = Trace1([&](Tracer& t) {
      const Tiles x = Declare(t);
      c.rich(x);
      c.plain(x);
    });
    absl::StatusOr<proto::Graph> alone = Trace1([&](Tracer& t) {
      const Tiles x = Declare(t);
      isa::memset(x.col, 0.0f);
      c.plain(x);
    });
    ASSERT_TRUE(reused.ok()) << reused.status();
    ASSERT_TRUE(alone.ok()) << alone.status();
    ASSERT_EQ(reused->streams(0).instructions_size(), 2);
    std::string diff;
    MessageDifferencer differ;
    differ.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differ.Compare(Last(*alone), Last(*reused))) << diff;
  }
}

// Writes pieces of changing sizes, up to past several doublings and
// populated chunks (8 MiB), into `buffer` and checks every byte.
void ExpectKeepsEveryByte(builder::StreamBuffer& buffer) {
  std::string want;
  uint32_t state = 1;
  while (want.size() < (size_t{8} << 20)) {
    state = state * 1664525u + 1013904223u;
    const size_t n = 1 + (state >> 20) % 3000;
    uint8_t* room = buffer.Room(n + 100);  // more room than is kept
    for (size_t i = 0; i < n + 100; ++i) {
      room[i] = static_cast<uint8_t>(state + i);
    }
    buffer.Commit(n);
    for (size_t i = 0; i < n; ++i) {
      want.push_back(static_cast<char>(static_cast<uint8_t>(state + i)));
    }
  }
  ASSERT_EQ(buffer.size(), want.size());
  EXPECT_TRUE(std::string(buffer.view().data(), buffer.view().size()) == want);
  builder::StreamBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.size(), want.size());
  EXPECT_EQ(buffer.size(), 0u);
}

TEST(StreamBufferTest, KeepsEveryByteAcrossGrowth) {
  builder::StreamBuffer buffer;
  ExpectKeepsEveryByte(buffer);
}

// The same with the pages brought in on the prefaulter's thread while the
// buffer is written and moved by mremap.
TEST(StreamBufferTest, KeepsEveryByteWithAPrefaulter) {
  builder::PagePrefaulter prefaulter;
  builder::StreamBuffer buffer(&prefaulter);
  ExpectKeepsEveryByte(buffer);
}

// Bringing pages in changes nothing in them: fresh memory, some of its
// pages written before, some while requests are pending; what was written
// stays, the rest reads as zero.
TEST(PagePrefaulterTest, LeavesTheBytesAsTheyAre) {
  constexpr size_t kSize = size_t{4} << 20;
  void* mapped = mmap(nullptr, kSize, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* bytes = static_cast<uint8_t*>(mapped);
  std::vector<uint8_t> want(kSize, 0);
  for (size_t i = 0; i < kSize; i += 3 * 4096 + 17) bytes[i] = want[i] = 1;
  {
    builder::PagePrefaulter prefaulter;
    prefaulter.Request(bytes, kSize / 2);
    prefaulter.Request(bytes + kSize / 2, kSize / 2);
    for (size_t i = 5; i < kSize; i += 7 * 4096 + 5) bytes[i] = want[i] = 2;
    prefaulter.Drain();
    prefaulter.Request(bytes + 1, kSize - 2);
  }  // the destructor finishes the last request
  EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes));
  munmap(mapped, kSize);
}

}  // namespace
}  // namespace nkigraph
