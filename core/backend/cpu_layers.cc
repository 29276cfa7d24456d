#include "core/backend/cpu_layers.h"

#include <dnnl.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend/cpu_parallel.h"
#include "core/common/check.h"

namespace dtlab::core {

namespace {

// An operand as the caller holds it (plain NCHW or OIHW) and as a primitive wants it. oneDNN's
// fastest convolutions want blocked layouts (nChw16c on AVX-512): measured here on the cnn's
// shapes at 2 threads they ran 3-20x faster than its implementation for the plain layouts
// (2.1 ms against 9.7 ms for the five primitives of a step at batch 128), far more than the
// reorders to and from the caller's layout cost. Where the layouts agree there is no reorder.
struct Operand {
  dnnl::memory user;   // plain; its handle is the caller's pointer, set per call
  dnnl::memory inner;  // the primitive's layout; `user` itself when they agree
  dnnl::reorder toInner, toUser;
  bool reordered = false;

  void make(const dnnl::memory::desc& plain, const dnnl::memory::desc& wanted,
            const dnnl::engine& engine) {
    user = dnnl::memory(plain, engine, nullptr);
    reordered = plain != wanted;
    if (!reordered) {
      inner = user;
      return;
    }
    inner = dnnl::memory(wanted, engine);
    toInner = dnnl::reorder(user, inner);
    toUser = dnnl::reorder(inner, user);
  }
  // An input: the caller's data, in the primitive's layout.
  void load(const float* data, dnnl::stream& stream) {
    user.set_data_handle(const_cast<float*>(data));
    if (reordered) toInner.execute(stream, user, inner);
  }
  // An output: where it goes once the primitive has run (store()).
  void bind(float* data) { user.set_data_handle(data); }
  void store(dnnl::stream& stream) {
    if (reordered) toUser.execute(stream, inner, user);
  }
};

}  // namespace

struct DnnlConvolutions::Entry {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backwardData;
  dnnl::convolution_backward_weights backwardWeights;
  // Each primitive's operands in its own layouts.
  Operand x, w, bias, y;                   // forward
  Operand dataDy, dataW, dx;               // backward data
  Operand weightsX, weightsDy, dw, dBias;  // backward weights
  std::unordered_map<int, dnnl::memory> forwardArgs, dataArgs, weightsArgs;
  std::vector<float> zeroBias;     // a missing bias
  std::vector<float> biasScratch;  // a bias gradient nobody asked for
  uint64_t lastUse = 0;
};

// Shapes kept at most: each holds buffers of its batch's activations in oneDNN's layouts, and a
// run whose local batch moves (the speed-proportional scheduler's rebalances) meets many; the
// one used longest ago goes first.
constexpr std::size_t kMaxShapes = 8;

struct DnnlConvolutions::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<Conv2dShape, Entry> entries;
  uint64_t uses = 0;  // a clock of calls, for the entries' lastUse
};

DnnlConvolutions::DnnlConvolutions() : state_(std::make_unique<State>()) {}
DnnlConvolutions::~DnnlConvolutions() = default;

DnnlConvolutions::Entry& DnnlConvolutions::entry(const Conv2dShape& s) {
  DTLAB_ENFORCE(s.batch > 0 && s.inChannels > 0 && s.outChannels > 0 && s.kernel > 0 &&
                    s.stride > 0 && s.padding >= 0 && s.outHeight() > 0 && s.outWidth() > 0,
                "convolution of ", s.batch, " x ", s.inChannels, " x ", s.height, " x ", s.width,
                " images, kernel ", s.kernel, ", stride ", s.stride, ", padding ", s.padding,
                " has no output");
  auto& entries = state_->entries;
  if (auto found = entries.find(s); found != entries.end()) {
    found->second.lastUse = ++state_->uses;
    return found->second;
  }
  if (entries.size() >= kMaxShapes)
    entries.erase(std::min_element(
        entries.begin(), entries.end(),
        [](const auto& a, const auto& b) { return a.second.lastUse < b.second.lastUse; }));
  // Made whole before it is kept: a shape oneDNN refuses leaves nothing behind.
  Entry e;
  e.lastUse = ++state_->uses;
  using dnnl::memory;
  using Tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const dnnl::engine& engine = state_->engine;
  const memory::dims xDims = {s.batch, s.inChannels, s.height, s.width};
  const memory::dims wDims = {s.outChannels, s.inChannels, s.kernel, s.kernel};
  const memory::dims yDims = {s.batch, s.outChannels, s.outHeight(), s.outWidth()};
  const memory::desc xPlain(xDims, f32, Tag::nchw), wPlain(wDims, f32, Tag::oihw),
      yPlain(yDims, f32, Tag::nchw), bPlain({s.outChannels}, f32, Tag::x);
  const memory::desc xAny(xDims, f32, Tag::any), wAny(wDims, f32, Tag::any),
      yAny(yDims, f32, Tag::any);
  const memory::dims strides = {s.stride, s.stride};
  const memory::dims padding = {s.padding, s.padding};
  // The right and bottom padding that makes the output size the formula's.
  const memory::dims paddingEnd = {(s.outHeight() - 1) * s.stride + s.kernel - s.height - s.padding,
                                   (s.outWidth() - 1) * s.stride + s.kernel - s.width - s.padding};
  const auto direct = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc forwardPd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, direct, xAny, wAny, bPlain,
                                      yAny, strides, padding, paddingEnd),
      engine);
  const dnnl::convolution_backward_data::primitive_desc dataPd(
      dnnl::convolution_backward_data::desc(direct, xAny, wAny, yAny, strides, padding, paddingEnd),
      engine, forwardPd);
  const dnnl::convolution_backward_weights::primitive_desc weightsPd(
      dnnl::convolution_backward_weights::desc(direct, xAny, wAny, bPlain, yAny, strides, padding,
                                               paddingEnd),
      engine, forwardPd);
  e.forward = dnnl::convolution_forward(forwardPd);
  e.backwardData = dnnl::convolution_backward_data(dataPd);
  e.backwardWeights = dnnl::convolution_backward_weights(weightsPd);
  e.x.make(xPlain, forwardPd.src_desc(), engine);
  e.w.make(wPlain, forwardPd.weights_desc(), engine);
  e.bias.make(bPlain, forwardPd.bias_desc(), engine);
  e.y.make(yPlain, forwardPd.dst_desc(), engine);
  e.dataDy.make(yPlain, dataPd.diff_dst_desc(), engine);
  e.dataW.make(wPlain, dataPd.weights_desc(), engine);
  e.dx.make(xPlain, dataPd.diff_src_desc(), engine);
  e.weightsX.make(xPlain, weightsPd.src_desc(), engine);
  e.weightsDy.make(yPlain, weightsPd.diff_dst_desc(), engine);
  e.dw.make(wPlain, weightsPd.diff_weights_desc(), engine);
  e.dBias.make(bPlain, weightsPd.diff_bias_desc(), engine);
  e.forwardArgs = {{DNNL_ARG_SRC, e.x.inner},
                   {DNNL_ARG_WEIGHTS, e.w.inner},
                   {DNNL_ARG_BIAS, e.bias.inner},
                   {DNNL_ARG_DST, e.y.inner}};
  e.dataArgs = {{DNNL_ARG_DIFF_DST, e.dataDy.inner},
                {DNNL_ARG_WEIGHTS, e.dataW.inner},
                {DNNL_ARG_DIFF_SRC, e.dx.inner}};
  e.weightsArgs = {{DNNL_ARG_SRC, e.weightsX.inner},
                   {DNNL_ARG_DIFF_DST, e.weightsDy.inner},
                   {DNNL_ARG_DIFF_WEIGHTS, e.dw.inner},
                   {DNNL_ARG_DIFF_BIAS, e.dBias.inner}};
  e.zeroBias.assign(static_cast<std::size_t>(s.outChannels), 0.0f);
  e.biasScratch.assign(static_cast<std::size_t>(s.outChannels), 0.0f);
  return entries.emplace(s, std::move(e)).first->second;
}

void DnnlConvolutions::forward(const Conv2dShape& shape, const float* x, const float* w,
                               const float* bias, float* y) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  dnnl::stream& stream = state_->stream;
  e.x.load(x, stream);
  e.w.load(w, stream);
  e.bias.load(bias != nullptr ? bias : e.zeroBias.data(), stream);
  e.y.bind(y);
  e.forward.execute(stream, e.forwardArgs);
  e.y.store(stream);
  stream.wait();
}

void DnnlConvolutions::backwardData(const Conv2dShape& shape, const float* dy, const float* w,
                                    float* dx) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  dnnl::stream& stream = state_->stream;
  e.dataDy.load(dy, stream);
  e.dataW.load(w, stream);
  e.dx.bind(dx);
  e.backwardData.execute(stream, e.dataArgs);
  e.dx.store(stream);
  stream.wait();
}

void DnnlConvolutions::backwardWeights(const Conv2dShape& shape, const float* x, const float* dy,
                                       float* dw, float* dBias) {
  std::lock_guard lock(state_->mutex);
  Entry& e = entry(shape);
  dnnl::stream& stream = state_->stream;
  e.weightsX.load(x, stream);
  e.weightsDy.load(dy, stream);
  e.dw.bind(dw);
  e.dBias.bind(dBias != nullptr ? dBias : e.biasScratch.data());
  e.backwardWeights.execute(stream, e.weightsArgs);
  e.dw.store(stream);
  e.dBias.store(stream);
  stream.wait();
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

enum class Slope { kNone, kReLU, kTanh };

template <Slope kSlope>
inline float slopeAt(float v) {
  if constexpr (kSlope == Slope::kReLU) return v > 0.0f ? 1.0f : 0.0f;
  if constexpr (kSlope == Slope::kTanh) return 1.0f - v * v;
  return 1.0f;
}

// 2 x 2 windows at stride 2, the cnn's pooling, a row pair at a time: every output a branch-free
// reduction of four pixels, every gradient pixel written once.
template <PoolKind kKind>
void pool2x2Forward(const Pool2dShape& s, const float* x, float* y, int threads) {
  const int64_t planes = s.batch * s.channels;
  const int64_t oh = s.outHeight(), ow = s.outWidth(), w = s.width;
  forRange(planes, planes * s.height * w, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t i = 0; i < oh; ++i) {
        const float* __restrict r0 = x + p * s.height * w + 2 * i * w;
        const float* __restrict r1 = r0 + w;
        float* __restrict out = y + (p * oh + i) * ow;
        for (int64_t j = 0; j < ow; ++j) {
          const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
          out[j] = kKind == PoolKind::kMax ? std::max(std::max(a, b), std::max(c, d))
                                           : 0.25f * ((a + b) + (c + d));
        }
      }
  });
}

template <PoolKind kKind, Slope kSlope>
void pool2x2Backward(const Pool2dShape& s, const float* x, const float* y, const float* dy,
                     float* dx, int threads) {
  const int64_t planes = s.batch * s.channels;
  const int64_t oh = s.outHeight(), ow = s.outWidth(), w = s.width, h = s.height;
  forRange(planes, planes * h * w, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* plane = dx + p * h * w;
      for (int64_t i = 0; i < oh; ++i) {
        const float* __restrict r0 = x + p * h * w + 2 * i * w;
        const float* __restrict r1 = r0 + w;
        float* __restrict d0 = plane + 2 * i * w;
        float* __restrict d1 = d0 + w;
        const float* __restrict best = y + (p * oh + i) * ow;
        const float* __restrict g = dy + (p * oh + i) * ow;
        for (int64_t j = 0; j < ow; ++j) {
          const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
          if constexpr (kKind == PoolKind::kMax) {
            // The first pixel, in row-major order, that holds the maximum.
            const float m = best[j];
            const bool ia = a == m, ib = !ia && b == m, ic = !ia && !ib && c == m;
            const bool id = !ia && !ib && !ic;
            d0[2 * j] = ia ? g[j] * slopeAt<kSlope>(a) : 0.0f;
            d0[2 * j + 1] = ib ? g[j] * slopeAt<kSlope>(b) : 0.0f;
            d1[2 * j] = ic ? g[j] * slopeAt<kSlope>(c) : 0.0f;
            d1[2 * j + 1] = id ? g[j] * slopeAt<kSlope>(d) : 0.0f;
          } else {
            const float share = 0.25f * g[j];
            d0[2 * j] = share * slopeAt<kSlope>(a);
            d0[2 * j + 1] = share * slopeAt<kSlope>(b);
            d1[2 * j] = share * slopeAt<kSlope>(c);
            d1[2 * j + 1] = share * slopeAt<kSlope>(d);
          }
        }
        if (w > 2 * ow) d0[w - 1] = d1[w - 1] = 0.0f;  // an odd width's last column
      }
      if (h > 2 * oh) std::fill_n(plane + (h - 1) * w, w, 0.0f);  // an odd height's last row
    }
  });
}

template <PoolKind kKind>
void pool2x2BackwardFor(const Pool2dShape& s, const float* x, const float* y, const float* dy,
                        float* dx, int threads) {
  if (!s.inputActivation)
    pool2x2Backward<kKind, Slope::kNone>(s, x, y, dy, dx, threads);
  else if (*s.inputActivation == Activation::kReLU)
    pool2x2Backward<kKind, Slope::kReLU>(s, x, y, dy, dx, threads);
  else
    pool2x2Backward<kKind, Slope::kTanh>(s, x, y, dy, dx, threads);
}

bool is2x2(const Pool2dShape& s) {
  return s.kernel == 2 && s.stride == 2 && s.padding == 0;
}

}  // namespace

void poolForwardCpu(const Pool2dShape& s, const float* x, float* y, int threads) {
  checkPool(s);
  if (is2x2(s)) {
    if (s.kind == PoolKind::kMax)
      pool2x2Forward<PoolKind::kMax>(s, x, y, threads);
    else
      pool2x2Forward<PoolKind::kAverage>(s, x, y, threads);
    return;
  }
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
  DTLAB_ENFORCE(s.inputActivation != Activation::kGELU,
                "pooling's backward cannot fold GELU in (its derivative needs the input)");
  const int64_t in = s.height * s.width;
  const int64_t out = s.outHeight() * s.outWidth();
  if (is2x2(s)) {
    if (s.kind == PoolKind::kMax)
      pool2x2BackwardFor<PoolKind::kMax>(s, x, y, dy, dx, threads);
    else
      pool2x2BackwardFor<PoolKind::kAverage>(s, x, y, dy, dx, threads);
    return;
  }
  // The activation's derivative at a pixel from its output.
  const auto slope = [act = s.inputActivation](float v) {
    if (!act) return slopeAt<Slope::kNone>(v);
    return *act == Activation::kReLU ? slopeAt<Slope::kReLU>(v) : slopeAt<Slope::kTanh>(v);
  };
  // Windows may overlap and add into the same pixels: a plane is zeroed, then summed into, by
  // the one thread that has it (its first window is (0, 0)), and the activation's derivative
  // applied once its last window is done.
  forEachWindow(s, threads, [&](int64_t p, int64_t i, int64_t j, Span rows, Span cols) {
    const float* plane = x + p * in;
    float* dPlane = dx + p * in;
    if (i == 0 && j == 0) std::fill_n(dPlane, in, 0.0f);
    const int64_t o = p * out + i * s.outWidth() + j;
    if (s.kind == PoolKind::kMax) {
      bool found = false;
      for (int64_t r = rows.begin; r < rows.end && !found; ++r)
        for (int64_t c = cols.begin; c < cols.end && !found; ++c)
          if (plane[r * s.width + c] == y[o]) {
            dPlane[r * s.width + c] += dy[o];
            found = true;
          }
    } else {
      const float share =
          dy[o] / static_cast<float>((rows.end - rows.begin) * (cols.end - cols.begin));
      for (int64_t r = rows.begin; r < rows.end; ++r)
        for (int64_t c = cols.begin; c < cols.end; ++c) dPlane[r * s.width + c] += share;
    }
    if (s.inputActivation && i + 1 == s.outHeight() && j + 1 == s.outWidth())
      for (int64_t k = 0; k < in; ++k) dPlane[k] *= slope(plane[k]);
  });
}

}  // namespace dtlab::core
