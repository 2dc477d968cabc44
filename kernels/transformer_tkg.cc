// transformer_tkg: the decode layers, unrolled at trace time.
//
//   x = X
//   for l in range(L):                                  # Scope("layer{l}")
//     a = jit(attention_block_tkg)(x, layer l)          # inlined
//     x = x + all_reduce_ranks(a)                       # tp_degree > 1
//     m = jit(mlp_tkg)(x, layer l)                      # inlined
//     x = x + all_reduce_ranks(m)
//   out = x
//
// Each core works on its H columns Hc of every residual-stream tensor.
// HBM path: the residual, the block outputs and the all-reduced sums are
// shared-HBM [T, H] tensors (each core its columns). SBUF path: the full
// residual stays in SBUF on both cores; a block's [T, H/2] shard is
// all-reduced in SBUF, added into this core's residual columns, and one
// sendrecv hands them to the other core (the shard swap), so the next
// block reads the whole residual again.
#include "kernels/transformer_tkg.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/dsl.h"
#include "kernels/two_cores.h"
#include "util/status_macros.h"

namespace nkigraph::kernels {
namespace {

// Pairs the shard swap's sendrecvs (the blocks' exchanges run in the same
// order on both cores too).
constexpr int kSwapPipe = 0;

AttentionWeights AttentionWeightsOf(const TransformerInputs& in, int64_t l) {
  AttentionWeights w;
  w.rmsnorm_gamma = in.rmsnorm_attn_gamma.Select(0, l);
  w.w_qkv = in.w_qkv.Select(0, l);
  w.cos = in.cos;
  w.sin = in.sin;
  w.k_cache = in.k_cache.Select(0, l);
  w.v_cache = in.v_cache.Select(0, l);
  w.mask_cache = in.mask_cache;
  w.cache_position = in.cache_position;
  w.w_o = in.w_o.Select(0, l);
  return w;
}

MlpWeights MlpWeightsOf(const TransformerInputs& in, int64_t l) {
  MlpWeights w;
  w.gamma = in.rmsnorm_mlp_gamma.Select(0, l);
  w.w_gate_up = in.w_gate_up.Select(0, l);
  w.w_down = in.w_down.Select(0, l);
  return w;
}

// The residual stream in HBM: each core reads and writes its columns.
class HbmResidual {
 public:
  HbmResidual(const TransformerInputs& in, const Tensor& out,
              const TransformerParams& p)
      : p_(p),
        h_(HiddenShard(p)),
        x_(in.x.Reshape({p.tokens(), p.hidden})),
        out_(out.Reshape({p.tokens(), p.hidden})) {
    const Shape rows = {p.tokens(), p.hidden};
    block_out_ =
        builder::ndarray(rows, p.dtype, Buffer::kSharedHbm, "block_out");
    if (p.tp_degree > 1) {
      all_reduced_ =
          builder::ndarray(rows, p.dtype, Buffer::kSharedHbm, "all_reduced");
    }
    residual_ = builder::ndarray(rows, p.dtype, Buffer::kSharedHbm, "residual");
  }

  // The block's ends: x the current residual, out the block output buffer.
  BlockIo Block() const { return BlockIo{x_, block_out_}; }

  // x = x + AllReduce(block output), into `out` after the last block.
  void AddBlockOutput(bool last) {
    Scope scope("residual_add");
    Tensor delta = block_out_;
    if (p_.tp_degree > 1) {
      isa::all_reduce(Columns(all_reduced_), Columns(block_out_));
      delta = all_reduced_;
    }
    const int64_t t = p_.tokens();
    Tensor sum = builder::ndarray({t, h_.size}, p_.dtype, Buffer::kSbuf,
                                  "residual_cols");
    isa::dma_copy(sum, Columns(x_));
    Tensor addend = builder::ndarray({t, h_.size}, p_.dtype, Buffer::kSbuf,
                                     "block_out_cols");
    isa::dma_copy(addend, Columns(delta));
    isa::tensor_tensor(sum, sum, addend, isa::Alu::kAdd);
    x_ = last ? out_ : residual_;
    isa::dma_copy(Columns(x_), sum);
  }

 private:
  Tensor Columns(const Tensor& rows) const {
    return rows.Slice(1, h_.offset, h_.size);
  }

  const TransformerParams& p_;
  CoreShard h_;
  Tensor x_;
  Tensor out_;
  Tensor block_out_;
  Tensor all_reduced_;
  Tensor residual_;
};

// The residual stream in SBUF: the full [T, H] residual on each core.
class SbufResidual {
 public:
  SbufResidual(const TransformerInputs& in, const Tensor& out,
               const TransformerParams& p)
      : p_(p), h_(HiddenShard(p)), out_(out.Reshape({p.tokens(), p.hidden})) {
    const int64_t t = p.tokens();
    residual_ =
        builder::ndarray({t, p.hidden}, p.dtype, Buffer::kSbuf, "residual_sb");
    isa::dma_copy(residual_, in.x.Reshape({t, p.hidden}));
    shard_ = builder::ndarray({t, h_.size}, p.dtype, Buffer::kSbuf,
                              "block_out_shard");
    if (p.tp_degree > 1) {
      all_reduced_ = builder::ndarray({t, h_.size}, p.dtype, Buffer::kSbuf,
                                      "all_reduced_shard");
    }
  }

  BlockIo Block() const { return BlockIo{residual_, shard_}; }

  // This core's residual columns += AllReduce(its shard); then the shard
  // swap, or after the last block the write of this core's columns of out.
  void AddBlockOutput(bool last) {
    Scope scope("residual_add");
    Tensor delta = shard_;
    if (p_.tp_degree > 1) {
      isa::all_reduce(all_reduced_, shard_);
      delta = all_reduced_;
    }
    const Tensor mine = residual_.Slice(1, h_.offset, h_.size);
    isa::tensor_tensor(mine, mine, delta, isa::Alu::kAdd);
    if (last) {
      isa::dma_copy(out_.Slice(1, h_.offset, h_.size), mine);
      return;
    }
    const int other = 1 - builder::program_id();
    const CoreShard theirs = ShardOf(p_.hidden, other);
    isa::sendrecv(residual_.Slice(1, theirs.offset, theirs.size), mine,
                  /*send_to=*/other, /*recv_from=*/other, kSwapPipe);
  }

 private:
  const TransformerParams& p_;
  CoreShard h_;
  Tensor out_;
  Tensor residual_;
  Tensor shard_;
  Tensor all_reduced_;
};

template <typename Residual>
void RunLayers(const TransformerInputs& in, const TransformerParams& p,
               Residual& residual) {
  const AttentionParams ap = AttentionParamsOf(p);
  const MlpParams mp = MlpParamsOf(p);
  for (int64_t l = 0; l < p.num_layers; ++l) {
    Scope layer(absl::StrCat("layer", l));
    builder::jit("attention_block_tkg", AttentionBlockTkg)(
        residual.Block(), AttentionWeightsOf(in, l), ap);
    residual.AddBlockOutput(/*last=*/false);
    builder::jit("mlp_tkg", MlpTkg)(residual.Block(), MlpWeightsOf(in, l), mp);
    residual.AddBlockOutput(/*last=*/l + 1 == p.num_layers);
  }
}

void TraceTransformerTkg(KernelIo& io, const TransformerParams& p) {
  const TransformerInputs in = DeclareTransformerInputs(io);
  const Tensor out = io.Output("out");
  // The composer is a plain function; jit makes it the kernel here, once.
  builder::jit("transformer_tkg", TransformerTkg)(in, out, p);
}

}  // namespace

TransformerInputs DeclareTransformerInputs(KernelIo& io) {
  TransformerInputs in;
  in.x = io.Input("X");
  in.rmsnorm_attn_gamma = io.Input("rmsnorm_attn_gamma");
  in.rmsnorm_mlp_gamma = io.Input("rmsnorm_mlp_gamma");
  in.w_qkv = io.Input("W_qkv");
  in.w_o = io.Input("W_o");
  in.w_gate_up = io.Input("W_gate_up");
  in.w_down = io.Input("W_down");
  in.k_cache = io.Input("K_cache");
  in.v_cache = io.Input("V_cache");
  in.cos = io.Input("cos");
  in.sin = io.Input("sin");
  in.mask_cache = io.Input("mask_cache");
  in.cache_position = io.Input("cache_position");
  return in;
}

AttentionParams AttentionParamsOf(const TransformerParams& p) {
  AttentionParams ap;
  static_cast<DecodeParams&>(ap) = p;
  ap.qk_norm = QkNorm::kNone;
  ap.fp8_kv = false;
  ap.o_proj = true;
  return ap;
}

MlpParams MlpParamsOf(const TransformerParams& p) {
  MlpParams mp;
  static_cast<DecodeParams&>(mp) = p;
  return mp;
}

void TransformerTkg(const TransformerInputs& in, const Tensor& out,
                    const TransformerParams& p) {
  if (p.sbuf_residual_and_cc) {
    SbufResidual residual(in, out, p);
    RunLayers(in, p, residual);
  } else {
    HbmResidual residual(in, out, p);
    RunLayers(in, p, residual);
  }
}

const KernelSpec<TransformerParams>& TransformerTkgSpec() {
  using P = TransformerParams;
  const auto stacked = [](const char* name, const char* text, auto inner) {
    return InputRow<P>(name, text, [inner](const P& p) {
      Shape shape = inner(p);
      shape.insert(shape.begin(), p.num_layers);
      return shape;
    });
  };
  const auto cache = [&](const char* name) {
    auto row = InputOutputRow<
        P>(name, "[L, B, kv_heads, C, d]", [](const P& p) {
      return Shape{p.num_layers, p.batch, p.kv_heads, p.cache_len, p.head_dim};
    });
    return row.PerRank().Note("updated in place");
  };
  static const auto* const spec = new KernelSpec<P>{
      .name = "transformer_tkg",
      .summary =
          "decode transformer: num_layers x (attention_block_tkg -> "
          "all-reduce -> residual -> mlp_tkg -> all-reduce -> residual), "
          "unrolled at trace time into one graph with the leaf kernels "
          "inlined; residual in HBM or (sbuf_residual_and_cc=1) in SBUF",
      .params = Concat(
          DecodeFields<P>({"batch", "seq_tkg", "hidden", "q_heads", "kv_heads",
                           "head_dim", "cache_len", "intermediate",
                           "rmsnorm_eps", "dtype"}),
          {IntField<P>("num_layers", &P::num_layers, {1, kTransformerMaxLayers},
                       "L: decoder layers")
               .Edges({2}),
           IntField<P>("tp_degree", &P::tp_degree, {1, kTransformerMaxTpDegree},
                       "tensor-parallel ranks (1: no all-reduce)")
               .Edges({2, 8}),
           FlagField<P>("sbuf_residual_and_cc", &P::sbuf_residual_and_cc,
                        "1: residual and all-reduce in SBUF, shards swapped "
                        "by sendrecv")}),
      .validate = [](const P& p) { return ValidateDecodeAttention(p); },
      .io =
          {
              DecodeXRow<P>().Replicated(),
              stacked("rmsnorm_attn_gamma", "[L, H]",
                      [](const P& p) { return Shape{p.hidden}; })
                  .Replicated(),
              stacked("rmsnorm_mlp_gamma", "[L, H]",
                      [](const P& p) { return Shape{p.hidden}; })
                  .Replicated(),
              stacked("W_qkv", "[L, H, (q_heads + 2·kv_heads)·d]",
                      [](const P& p) {
                        return Shape{p.hidden,
                                     (p.q_heads + 2 * p.kv_heads) * p.head_dim};
                      })
                  .PerRank(),
              stacked("W_o", "[L, q_heads·d, H]",
                      [](const P& p) {
                        return Shape{p.q_heads * p.head_dim, p.hidden};
                      })
                  .PerRank(),
              stacked("W_gate_up", "[L, H, 2, I]",
                      [](const P& p) {
                        return Shape{p.hidden, 2, p.intermediate};
                      })
                  .PerRank(),
              stacked("W_down", "[L, I, H]",
                      [](const P& p) {
                        return Shape{p.intermediate, p.hidden};
                      })
                  .PerRank(),
              cache("K_cache"),
              cache("V_cache"),
              InputRow<P>("cos", "[B, S, d/2]",
                          [](const P& p) {
                            return Shape{p.batch, p.seq_tkg, p.head_dim / 2};
                          })
                  .Replicated(),
              InputRow<P>("sin", "[B, S, d/2]",
                          [](const P& p) {
                            return Shape{p.batch, p.seq_tkg, p.head_dim / 2};
                          })
                  .Replicated(),
              InputRow<P>("mask_cache", "[B, C]",
                          [](const P& p) {
                            return Shape{p.batch, p.cache_len};
                          })
                  .Replicated()
                  .Values("{0, 1}",
                          [](const P&) {
                            return ValueRange{0, 1};
                          }),
              InputRow<P>("cache_position", "[B]",
                          [](const P& p) { return Shape{p.batch}; })
                  .Int32()
                  .Replicated()
                  .Values("[0, C − S]",
                          [](const P& p) {
                            return ValueRange{0, p.cache_len - p.seq_tkg};
                          }),
              DecodeOutRow<P>().PerRank().Note("the same values on every rank"),
          },
      .world = [](const P& p) { return TwoCoreWorld(p.tp_degree); },
      .body = TraceTransformerTkg,
      .reference = TransformerTkgReference,
      // A layer's RMSNorm over fewer than 64 values is ill-conditioned: a
      // bfloat16 rounding that lands the other way in one layer's output
      // turns the next layer's normalised row (seen: hidden 2, two layers,
      // one token 7% of the output's scale off, float32 within 6e-6).
      // Such bfloat16 stacks are held to 0.1; everything else to the
      // family's tolerance.
      .tolerance =
          [](const P& p) {
            return p.dtype == proto::BFLOAT16 && p.hidden < 64 &&
                           p.num_layers > 1
                       ? 0.1
                       : ScaleTolerance(p.dtype);
          },
      .comparison = Comparison::kScale,
      .make_inputs = MakeTransformerTkgInputs,
  };
  return *spec;
}

}  // namespace nkigraph::kernels
