#include "core/backend/cpu_layers.h"

#include <dnnl.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/backend/cpu_parallel.h"
#include "core/common/check.h"

namespace dtlab::core {

struct DnnlConvolutions::Entry {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backwardData;
  dnnl::convolution_backward_weights backwardWeights;
  // One memory object per operand, shared by the primitives that use it or its gradient
  // (their layouts are the same plain ones).
  dnnl::memory x, w, bias, y;
  std::unordered_map<int, dnnl::memory> forwardArgs, dataArgs, weightsArgs;
  std::vector<float> zeroBias;     // a missing bias
  std::vector<float> biasScratch;  // a bias gradient nobody asked for
};

struct DnnlConvolutions::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Conv2dShape, Entry> entries;
};

DnnlConvolutions::DnnlConvolutions() : state_(std::make_unique<State>()) {}
DnnlConvolutions::~DnnlConvolutions() = default;

DnnlConvolutions::Entry& DnnlConvolutions::entry(const Conv2dShape& s) {
  DTLAB_ENFORCE(s.batch > 0 && s.inChannels > 0 && s.outChannels > 0 && s.kernel > 0 &&
                    s.stride > 0 && s.padding >= 0 && s.outHeight() > 0 && s.outWidth() > 0,
                "convolution of ", s.batch, " x ", s.inChannels, " x ", s.height, " x ", s.width,
                " images, kernel ", s.kernel, ", stride ", s.stride, ", padding ", s.padding,
                " has no output");
  auto [it, inserted] = state_->entries.try_emplace(s);
  Entry& e = it->second;
  if (!inserted) return e;
  using dnnl::memory;
  using Tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const memory::desc xDesc({s.batch, s.inChannels, s.height, s.width}, f32, Tag::nchw);
  const memory::desc wDesc({s.outChannels, s.inChannels, s.kernel, s.kernel}, f32, Tag::oihw);
  const memory::desc bDesc({s.outChannels}, f32, Tag::x);
  const memory::desc yDesc({s.batch, s.outChannels, s.outHeight(), s.outWidth()}, f32, Tag::nchw);
  const memory::dims strides = {s.stride, s.stride};
  const memory::dims padding = {s.padding, s.padding};
  // The right and bottom padding that makes the output size the formula's.
  const memory::dims paddingEnd = {(s.outHeight() - 1) * s.stride + s.kernel - s.height - s.padding,
                                   (s.outWidth() - 1) * s.stride + s.kernel - s.width - s.padding};
  const auto direct = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc forwardPd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, xDesc, wDesc,
                                      bDesc, yDesc, strides, padding, paddingEnd),
      state_->engine);
  e.forward = dnnl::convolution_forward(forwardPd);
  e.backwardData = dnnl::convolution_backward_data(dnnl::convolution_backward_data::primitive_desc(
      dnnl::convolution_backward_data::desc(direct, xDesc, wDesc, yDesc, strides, padding,
                                            paddingEnd),
      state_->engine, forwardPd));
  e.backwardWeights =
      dnnl::convolution_backward_weights(dnnl::convolution_backward_weights::primitive_desc(
          dnnl::convolution_backward_weights::desc(direct, xDesc, wDesc, bDesc, yDesc, strides,
                                                   padding, paddingEnd),
          state_->engine, forwardPd));
  e.x = memory(xDesc, state_->engine, nullptr);
  e.w = memory(wDesc, state_->engine, nullptr);
  e.bias = memory(bDesc, state_->engine, nullptr);
  e.y = memory(yDesc, state_->engine, nullptr);
  e.forwardArgs = {
      {DNNL_ARG_SRC, e.x}, {DNNL_ARG_WEIGHTS, e.w}, {DNNL_ARG_BIAS, e.bias}, {DNNL_ARG_DST, e.y}};
  e.dataArgs = {{DNNL_ARG_DIFF_DST, e.y}, {DNNL_ARG_WEIGHTS, e.w}, {DNNL_ARG_DIFF_SRC, e.x}};
  e.weightsArgs = {{DNNL_ARG_SRC, e.x},
                   {DNNL_ARG_DIFF_DST, e.y},
                   {DNNL_ARG_DIFF_WEIGHTS, e.w},
                   {DNNL_ARG_DIFF_BIAS, e.bias}};
  e.zeroBias.assign(static_cast<std::size_t>(s.outChannels), 0.0f);
  e.biasScratch.assign(static_cast<std::size_t>(s.outChannels), 0.0f);
  return e;
}

void DnnlConvolutions::forward(const Conv2dShape& shape, const float* x, const float* w,
                               const float* bias, float* y) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  e.x.set_data_handle(const_cast<float*>(x));
  e.w.set_data_handle(const_cast<float*>(w));
  e.bias.set_data_handle(const_cast<float*>(bias != nullptr ? bias : e.zeroBias.data()));
  e.y.set_data_handle(y);
  e.forward.execute(state_->stream, e.forwardArgs);
  state_->stream.wait();
}

void DnnlConvolutions::backwardData(const Conv2dShape& shape, const float* dy, const float* w,
                                    float* dx) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  e.y.set_data_handle(const_cast<float*>(dy));
  e.w.set_data_handle(const_cast<float*>(w));
  e.x.set_data_handle(dx);
  e.backwardData.execute(state_->stream, e.dataArgs);
  state_->stream.wait();
}

void DnnlConvolutions::backwardWeights(const Conv2dShape& shape, const float* x, const float* dy,
                                       float* dw, float* dBias) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  e.x.set_data_handle(const_cast<float*>(x));
  e.y.set_data_handle(const_cast<float*>(dy));
  e.w.set_data_handle(dw);
  e.bias.set_data_handle(dBias != nullptr ? dBias : e.biasScratch.data());
  e.backwardWeights.execute(state_->stream, e.weightsArgs);
  state_->stream.wait();
}

namespace {

// The window of output pixel (o) along one axis, clipped to the image: [begin, end).
struct Span {
  int64_t begin, end;
};
Span window(int64_t o, int64_t stride, int64_t padding, int64_t kernel, int64_t size) {
  const int64_t start = o * stride - padding;
  return {std::max<int64_t>(start, 0), std::min(start + kernel, size)};
}

// Calls body(plane, i, j, rows, cols) for every output pixel (i, j) of every (image, channel)
// plane, with its window clipped to the image; a thread takes whole planes.
template <typename Body>
void forEachWindow(const Pool2dShape& s, int threads, Body&& body) {
  const int64_t planes = s.batch * s.channels;
  forRange(planes, planes * s.height * s.width, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t i = 0; i < s.outHeight(); ++i) {
        const Span rows = window(i, s.stride, s.padding, s.kernel, s.height);
        for (int64_t j = 0; j < s.outWidth(); ++j)
          body(p, i, j, rows, window(j, s.stride, s.padding, s.kernel, s.width));
      }
  });
}

void checkPool(const Pool2dShape& s) {
  DTLAB_ENFORCE(s.batch > 0 && s.channels > 0 && s.kernel > 0 && s.stride > 0 && s.padding >= 0 &&
                    s.padding < s.kernel && s.outHeight() > 0 && s.outWidth() > 0,
                "pooling of ", s.batch, " x ", s.channels, " x ", s.height, " x ", s.width,
                " images, window ", s.kernel, ", stride ", s.stride, ", padding ", s.padding,
                " has no output");
}

}  // namespace

void poolForwardCpu(const Pool2dShape& s, const float* x, float* y, int threads) {
  checkPool(s);
  const int64_t in = s.height * s.width;
  const int64_t out = s.outHeight() * s.outWidth();
  forEachWindow(s, threads, [&](int64_t p, int64_t i, int64_t j, Span rows, Span cols) {
    const float* plane = x + p * in;
    float value;
    if (s.kind == PoolKind::kMax) {
      value = -std::numeric_limits<float>::infinity();
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = cols.begin; c < cols.end; ++c)
          value = std::max(value, plane[r * s.width + c]);
    } else {
      value = 0.0f;
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = cols.begin; c < cols.end; ++c) value += plane[r * s.width + c];
      value /= static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
    }
    y[p * out + i * s.outWidth() + j] = value;
  });
}

void poolBackwardCpu(const Pool2dShape& s, const float* x, const float* y, const float* dy,
                     float* dx, int threads) {
  checkPool(s);
  const int64_t in = s.height * s.width;
  const int64_t out = s.outHeight() * s.outWidth();
  // Overlapping windows add into the same pixels: a plane is zeroed, then summed into, by the
  // one thread that has it (its first window is (0, 0)).
  forEachWindow(s, threads, [&](int64_t p, int64_t i, int64_t j, Span rows, Span cols) {
    const float* plane = x + p * in;
    float* dPlane = dx + p * in;
    if (i == 0 && j == 0) std::fill_n(dPlane, in, 0.0f);
    const int64_t o = p * out + i * s.outWidth() + j;
    if (s.kind == PoolKind::kMax) {
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = cols.begin; c < cols.end; ++c)
          if (plane[r * s.width + c] == y[o]) {
            dPlane[r * s.width + c] += dy[o];
            return;
          }
    } else {
      const float share =
          dy[o] / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = cols.begin; c < cols.end; ++c) dPlane[r * s.width + c] += share;
    }
  });
}

}  // namespace dtlab::core
