// row_softmax, tiled:
//
//   for each row tile (<= 128 rows on the partitions):
//     m = -inf; d = 0                       # running max and denominator
//     for each column chunk:                # pass 1
//       c = x[rows, chunk]
//       m_new = max(m, reduce_max(c))
//       d = d * exp(m - m_new) + sum(exp(c - m_new))
//       m = m_new
//     r = 1 / d
//     for each column chunk:                # pass 2
//       out[rows, chunk] = exp(x[rows, chunk] - m) * r
#include "row_softmax.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "builder/isa.h"
#include "builder/jit.h"
#include "builder/tensor.h"
#include "builder/tiling.h"
#include "builder/tracer.h"
#include "kernels/device.h"

namespace my_kernels {
namespace {

namespace isa = nkigraph::builder::isa;
using isa::ActFunc;
using isa::Alu;
using nkigraph::builder::Buffer;
using nkigraph::builder::Scope;
using nkigraph::builder::Tensor;
using nkigraph::builder::Tile;
using nkigraph::builder::TiledRange;
using nkigraph::kernels::Partitions;
namespace proto = nkigraph::proto;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A [rows, 1] float32 column: one value per row of the tile.
Tensor Column(const Tile& rows, const char* name) {
  return nkigraph::builder::ndarray({rows.size, 1}, proto::FLOAT32,
                                    Buffer::kSbuf, name);
}

// Pass 1: the row maxima `m` and the sums `d` of exp(x - m), streamed one
// chunk at a time with the running-max correction.
void RowMaxAndDenominator(const Tensor& m, const Tensor& d, const Tensor& x,
                          const Tensor& chunk_buf, const Tensor& exp_buf,
                          const Tile& rows, const RowSoftmaxParams& p) {
  Scope scope("max_and_sum");
  Tensor m_new = Column(rows, "m_new");
  Tensor neg_m_new = Column(rows, "neg_m_new");
  Tensor chunk_max = Column(rows, "chunk_max");
  Tensor correction = Column(rows, "correction");
  Tensor chunk_sum = Column(rows, "chunk_sum");
  isa::memset(m, kNegInf);
  isa::memset(d, 0.0f);
  for (const Tile cols : TiledRange(p.cols, p.chunk)) {
    const Tensor c = chunk_buf.Slice(1, 0, cols.size);
    const Tensor e = exp_buf.Slice(1, 0, cols.size);
    isa::dma_copy(
        c, x.Slice(0, rows.offset, rows.size).Slice(1, cols.offset, cols.size));
    isa::tensor_reduce(chunk_max, Alu::kMaximum, c);
    isa::tensor_tensor(m_new, m, chunk_max, Alu::kMaximum);
    isa::tensor_scalar(neg_m_new, m_new, Alu::kMultiply, -1.0f);
    isa::activation(correction, ActFunc::kExp, m, {.bias = neg_m_new});
    isa::activation(e, ActFunc::kExp, c,
                    {.bias = neg_m_new,
                     .reduce_cmd = isa::ReduceCmd::kResetReduce,
                     .reduce_res = chunk_sum});
    isa::tensor_scalar(d, d, Alu::kMultiply, correction,
                       {.op1 = Alu::kAdd, .operand1 = chunk_sum});
    isa::tensor_copy(m, m_new);
  }
}

// Pass 2: out = exp(x - m) * (1 / d), chunk by chunk.
void Normalize(const Tensor& out, const Tensor& x, const Tensor& m,
               const Tensor& d, const Tensor& chunk_buf, const Tensor& exp_buf,
               const Tile& rows, const RowSoftmaxParams& p) {
  Scope scope("normalize");
  Tensor neg_m = Column(rows, "neg_m");
  Tensor inv_d = Column(rows, "inv_d");
  isa::tensor_scalar(neg_m, m, Alu::kMultiply, -1.0f);
  isa::activation(inv_d, ActFunc::kReciprocal, d);
  Tensor out_buf =
      nkigraph::builder::ndarray({rows.size, std::min(p.chunk, p.cols)},
                                 p.dtype, Buffer::kSbuf, "out_chunk");
  for (const Tile cols : TiledRange(p.cols, p.chunk)) {
    const Tensor c = chunk_buf.Slice(1, 0, cols.size);
    const Tensor e = exp_buf.Slice(1, 0, cols.size);
    const Tensor o = out_buf.Slice(1, 0, cols.size);
    isa::dma_copy(
        c, x.Slice(0, rows.offset, rows.size).Slice(1, cols.offset, cols.size));
    isa::activation(e, ActFunc::kExp, c, {.bias = neg_m});
    isa::tensor_scalar(o, e, Alu::kMultiply, inv_d);
    isa::dma_copy(
        out.Slice(0, rows.offset, rows.size).Slice(1, cols.offset, cols.size),
        o);
  }
}

void TraceRowSoftmax(nkigraph::kernels::KernelIo& io,
                     const RowSoftmaxParams& p) {
  const Tensor x = io.Input("x");
  const Tensor out = io.Output("out");
  nkigraph::builder::jit("row_softmax", RowSoftmax)(x, out, p);
}

}  // namespace

void RowSoftmax(const Tensor& x, const Tensor& out, const RowSoftmaxParams& p) {
  const int64_t width = std::min(p.chunk, p.cols);
  for (const Tile rows : TiledRange(p.rows, Partitions())) {
    Scope scope("row_tile");
    Tensor chunk_buf = nkigraph::builder::ndarray({rows.size, width}, p.dtype,
                                                  Buffer::kSbuf, "x_chunk");
    Tensor exp_buf = nkigraph::builder::ndarray(
        {rows.size, width}, proto::FLOAT32, Buffer::kSbuf, "exp_chunk");
    Tensor m = Column(rows, "m");
    Tensor d = Column(rows, "d");
    RowMaxAndDenominator(m, d, x, chunk_buf, exp_buf, rows, p);
    Normalize(out, x, m, d, chunk_buf, exp_buf, rows, p);
  }
}

const nkigraph::kernels::KernelSpec<RowSoftmaxParams>& RowSoftmaxSpec() {
  using P = RowSoftmaxParams;
  namespace nk = nkigraph::kernels;
  const auto shape = [](const P& p) { return nk::Shape{p.rows, p.cols}; };
  static const auto* const spec = new nk::KernelSpec<P>{
      .name = "row_softmax",
      .summary =
          "out = softmax(x) along each row: 128-row tiles, column "
          "chunks streamed through SBUF, running max and sum",
      .params =
          {
              nk::IntField<P>("rows", &P::rows, {1, 1 << 20}, "rows of x"),
              nk::IntField<P>("cols", &P::cols, {1, 1 << 20},
                              "columns of x: the softmax axis"),
              // Three chunk-wide buffers (x, exp in float32, out) fit one
              // SBUF partition up to 16384 columns.
              nk::IntField<P>("chunk", &P::chunk,
                              {1, 16384, "the chunk buffers must fit SBUF"},
                              "columns streamed through SBUF at a time"),
              nk::DTypeField<P>(),
          },
      .io = {nk::InputRow<P>("x", "[rows, cols]", shape),
             nk::OutputRow<P>("out", "[rows, cols]", shape)},
      .body = TraceRowSoftmax,
      .reference = RowSoftmaxReference,
      // float32: a few ulps of exp and of the fp32 sums; bfloat16: the
      // output's rounding (2^-8 relative) with margin.
      .tolerance = nk::ToleranceByDType(1e-5, 1e-2),
  };
  return *spec;
}

}  // namespace my_kernels
