#include "vendor_bridge/onednn/Drafts.h"

#include <cstring>

namespace friction::vendor::onednn {

memory::dims dimsOf(const Value* v) {
  std::vector<int64_t> d = v->shape().staticDims();
  if (d.empty()) d = {1};
  return memory::dims(d.begin(), d.end());
}

Tag plainTag(size_t rank) {
  static const Tag tags[] = {Tag::a, Tag::a, Tag::ab, Tag::abc, Tag::abcd, Tag::abcde, Tag::abcdef};
  need(rank <= 6);
  return tags[rank];
}

memory constMemory(Context& ctx, const Tensor& t, const memory::desc& md) {
  need(t.dtype() == DType::F32 && size_t(t.numel()) * 4 == md.get_size());
  memory m(md, ctx.eng);
  std::memcpy(m.get_data_handle(), t.rawData(), md.get_size());
  return m;
}

// A constant in `plain`, reordered to `want` when the primitive chose another format.
memory reordered(Context& ctx, const Tensor& t, const memory::desc& plain, const memory::desc& want, Draft& d) {
  memory src = constMemory(ctx, t, plain);
  if (want == plain) return src;
  memory dst(want, ctx.eng);
  dnnl::reorder(src, dst).execute(ctx.strm, src, dst);
  ctx.strm.wait();
  d.reorders++;
  return dst;
}

// Binds the weights: a constant once, reordered to the primitive's choice;
// otherwise the run-time operand in its plain layout.
void bindWeights(Context& ctx, Draft& d, const Tensor* constant, const Operand& plain, const memory::desc& want) {
  if (constant)
    d.fixed.emplace_back(DNNL_ARG_WEIGHTS, reordered(ctx, *constant, plain.md(), want, d));
  else
    d.rt.emplace_back(DNNL_ARG_WEIGHTS, plain);
}

}  // namespace friction::vendor::onednn
