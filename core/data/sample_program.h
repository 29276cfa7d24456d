#pragma once

// The per-sample generators of the synthetic datasets, written once for the host and the
// device. A SampleProgram holds everything that defines a dataset's samples (its kind, its
// scalars and its parameter tables); generateSample() computes sample i of a split from it.
// The CPU datasets (core/data/*.cc) call generateSample() in a loop; the CUDA backend copies
// the tables to the GPU and calls the very same function from a kernel, one thread per
// sample, so a GPU worker generates its rows where it trains on them.
//
// Host and device agree bit for bit on the integer draws (labels, cells, positions on the
// random stream) and, for the floating-point arithmetic, as far as the math library allows:
// the device's sin/cos/log/tanh may differ from glibc's in the last place.
//
// Plain C++17 with DTLAB_HD, as nvcc compiles it too; no core types beyond random.h.

#include <math.h>

#include <cstdint>
#include <type_traits>

#include "core/common/host_device.h"
#include "core/common/random.h"

namespace dtlab::core {

enum class Split { kTrain, kTest };

namespace datagen {

enum class SampleKind : int { kBlobs, kSpirals, kCheckerboard, kTeacher, kRegression, kShapes };

// First element of every deriveSeed path, so parameter draws, probe inputs and samples
// come from unrelated streams of the same seed.
inline constexpr uint64_t kParameterStream = 0x50415241'4D455445ull;
inline constexpr uint64_t kProbeStream = 0x50524F42'45535452ull;
inline constexpr uint64_t kSampleStream = 0x53414D50'4C455300ull;

// What defines a dataset's samples. Scalars a kind does not use stay zero; `table` and
// `dims` point into memory the owner keeps alive (the Dataset on the host, a device copy on
// the GPU).
struct SampleProgram {
  SampleKind kind = SampleKind::kBlobs;
  uint64_t seed = 0;
  int64_t features = 0;
  int64_t classes = 1;  // outputs: 1 for regression
  // blobs, regression: noise std; shapes: pixel noise std; teacher: label noise probability
  float noise = 0.0f;
  float jitter = 0.0f;  // spirals, checkerboard: positional jitter std
  float turns = 0.0f;   // spirals
  float cell = 0.0f;    // checkerboard: cell width
  float bias = 0.0f;    // regression: intercept
  int64_t grid = 0;     // checkerboard: cells per side
  // blobs: centres (classes x features); regression: weights (features); teacher: per layer,
  // weights (in x out, row-major) then biases (out).
  const float* table = nullptr;
  int64_t tableSize = 0;
  // teacher: layer widths, dims[0] = features .. dims[layers] = classes.
  const int64_t* dims = nullptr;
  int layers = 0;
  int64_t maxWidth = 0;  // teacher: widest layer
};

// Floats of scratch one sample needs (the teacher's two activation buffers).
DTLAB_HD inline int64_t scratchFloats(const SampleProgram& p) {
  return p.kind == SampleKind::kTeacher ? 2 * p.maxWidth : 0;
}

DTLAB_HD inline uint64_t sampleKey(uint64_t seed, Split split, int64_t index) {
  return deriveSeed(seed, kSampleStream, static_cast<uint64_t>(split),
                    static_cast<uint64_t>(index));
}

// Approximately standard normal from a single 64-bit draw: the sum of four 16-bit
// uniforms (Irwin-Hall), rescaled to unit variance. Bounded at +-3.46; used for pixel
// noise, where a Box-Muller pair per pixel would dominate the cost of an image.
DTLAB_HD inline float fastNormal(Rng& rng) {
  const uint64_t r = rng.next();
  const uint32_t sum = static_cast<uint32_t>(r & 0xFFFF) +
                       static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                       static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
  // Each term is uniform on {0..65535}: mean 32767.5, variance (65536^2 - 1) / 12.
  constexpr float kMean = 4.0f * 32767.5f;
  constexpr float kInvStd = 1.7320508f / 65536.0f;  // 1 / sqrt(4 * 65536^2 / 12)
  return (static_cast<float>(sum) - kMean) * kInvStd;
}

namespace detail {

// Gaussian blobs: class i % classes around its centre, N(centre, noise^2 I).
DTLAB_HD inline float blobs(const SampleProgram& p, int64_t index, Rng& rng, float* x) {
  const int64_t c = index % p.classes;
  const int64_t width = p.features;
  const float noise = p.noise;  // a local: stores to x could otherwise alias p.noise
  const float* centre = p.table + c * width;
  for (int64_t j = 0; j < width; ++j) x[j] = centre[j] + noise * rng.normal();
  return static_cast<float>(c);
}

// Spirals: the arms start at this radius rather than at the origin, where all arms
// would meet and no classifier could tell them apart.
inline constexpr float kSpiralInnerRadius = 0.15f;

// Spirals: arm i % classes, at a uniform position along it, plus isotropic jitter.
DTLAB_HD inline float spirals(const SampleProgram& p, int64_t index, Rng& rng, float* x) {
  constexpr float kTwoPi = 2.0f * 3.14159265358979323846f;
  const int64_t arm = index % p.classes;
  const float t = rng.uniform();
  const float radius = kSpiralInnerRadius + (1.0f - kSpiralInnerRadius) * t;
  const float angle =
      kTwoPi * (p.turns * t + static_cast<float>(arm) / static_cast<float>(p.classes));
  x[0] = radius * cosf(angle) + p.jitter * rng.normal();
  x[1] = radius * sinf(angle) + p.jitter * rng.normal();
  return static_cast<float>(arm);
}

// Checkerboard: colour i % 2, a uniform cell of that colour, a uniform point in it.
DTLAB_HD inline float checkerboard(const SampleProgram& p, int64_t index, Rng& rng, float* x) {
  const int64_t colour = index % 2;
  int64_t cx = 0;
  int64_t cy = 0;
  // Rejection: half the cells have each colour, so two draws are expected.
  do {
    cx = static_cast<int64_t>(rng.below(static_cast<uint64_t>(p.grid)));
    cy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(p.grid)));
  } while ((cx + cy) % 2 != colour);
  x[0] = -1.0f + (static_cast<float>(cx) + rng.uniform()) * p.cell + p.jitter * rng.normal();
  x[1] = -1.0f + (static_cast<float>(cy) + rng.uniform()) * p.cell + p.jitter * rng.normal();
  return static_cast<float>(colour);
}

// The teacher network on one input; returns the logits, held in one of the two scratch
// buffers (maxWidth floats each).
DTLAB_HD inline const float* teacherForward(const SampleProgram& p, const float* x,
                                            float* scratch) {
  const float* in = x;
  float* out = scratch;
  const float* layer = p.table;
  for (int l = 0; l < p.layers; ++l) {
    const int64_t fanIn = p.dims[l];
    const int64_t fanOut = p.dims[l + 1];
    const float* weights = layer;
    const float* bias = layer + fanIn * fanOut;
    for (int64_t o = 0; o < fanOut; ++o) out[o] = bias[o];
    for (int64_t i = 0; i < fanIn; ++i) {
      const float v = in[i];
      const float* w = weights + i * fanOut;
      for (int64_t o = 0; o < fanOut; ++o) out[o] += v * w[o];
    }
    if (l + 1 < p.layers) {
      for (int64_t o = 0; o < fanOut; ++o) out[o] = tanhf(out[o]);
    }
    layer = bias + fanOut;
    in = out;
    out = out == scratch ? scratch + p.maxWidth : scratch;
  }
  return in;
}

// Teacher: N(0, I) input labelled by the argmax of the teacher network (the first of equal
// maxima), replaced by a uniform class with probability `noise`.
DTLAB_HD inline float teacher(const SampleProgram& p, Rng& rng, float* x, float* scratch) {
  for (int64_t j = 0; j < p.features; ++j) x[j] = rng.normal();
  const float* logits = teacherForward(p, x, scratch);
  int64_t label = 0;
  for (int64_t c = 1; c < p.classes; ++c) {
    if (logits[label] < logits[c]) label = c;
  }
  // Both draws are always made, so whether a sample is relabelled depends only on its
  // own stream: raising the label noise relabels a superset of the samples.
  const float u = rng.uniform();
  const auto random = static_cast<int64_t>(rng.below(static_cast<uint64_t>(p.classes)));
  if (u < p.noise) label = random;
  return static_cast<float>(label);
}

// Linear regression: x ~ N(0, I), y = w . x + bias + N(0, noise^2).
DTLAB_HD inline float regression(const SampleProgram& p, Rng& rng, float* x) {
  float y = p.bias;
  for (int64_t j = 0; j < p.features; ++j) {
    x[j] = rng.normal();
    y += p.table[j] * x[j];
  }
  return y + p.noise * rng.normal();
}

// Shapes: 28 x 28 images of ten classes.
inline constexpr int kSide = 28;
inline constexpr int64_t kPixels = int64_t{kSide} * kSide;
inline constexpr int64_t kShapeClasses = 10;
// Per-image jitter. Shifts and scales are large enough that no single pixel identifies
// a class, so a model has to learn shapes rather than positions; rotations stay small
// enough that a square does not become a diamond or a bar change orientation. With
// these ranges an MLP 784-256-256-10 (SGD, lr 0.05, batch 128, 20k images) is near 94%
// test accuracy after 800 steps and 97% after 3000: learnable, but with a curve to
// compare strategies on.
inline constexpr float kMaxShift = 5.0f;  // pixels, each axis
inline constexpr float kMinHalfSize = 4.5f;
inline constexpr float kMaxHalfSize = 10.0f;
inline constexpr float kMinStroke = 0.9f;  // half-width of outlines and strokes, pixels
inline constexpr float kMaxStroke = 1.5f;
inline constexpr float kMaxRotation = 0.26f;  // radians, about 15 degrees
inline constexpr float kMinIntensity = 0.4f;
inline constexpr float kMaxIntensity = 1.0f;

// Signed distances (negative inside), in pixels, of shapes centred at the origin.
DTLAB_HD inline float box(float x, float y, float halfWidth, float halfHeight) {
  const float dx = fabsf(x) - halfWidth;
  const float dy = fabsf(y) - halfHeight;
  const float ox = hd::maxOf(dx, 0.0f);
  const float oy = hd::maxOf(dy, 0.0f);
  return sqrtf(ox * ox + oy * oy) + hd::minOf(hd::maxOf(dx, dy), 0.0f);
}

DTLAB_HD inline float segment(float x, float y, float ax, float ay, float bx, float by) {
  const float px = x - ax;
  const float py = y - ay;
  const float vx = bx - ax;
  const float vy = by - ay;
  const float t = hd::clampOf((px * vx + py * vy) / (vx * vx + vy * vy), 0.0f, 1.0f);
  const float dx = px - t * vx;
  const float dy = py - t * vy;
  return sqrtf(dx * dx + dy * dy);
}

// Equilateral triangle of side 2r pointing up (y grows downwards in an image), after
// Inigo Quilez's exact distance.
DTLAB_HD inline float triangle(float x, float y, float r) {
  constexpr float kSqrt3 = 1.7320508f;
  float px = fabsf(x) - r;
  float py = -y + r / kSqrt3;
  if (px + kSqrt3 * py > 0.0f) {
    const float nx = 0.5f * (px - kSqrt3 * py);
    const float ny = 0.5f * (-kSqrt3 * px - py);
    px = nx;
    py = ny;
  }
  px -= hd::clampOf(px, -2.0f * r, 0.0f);
  const float length = sqrtf(px * px + py * py);
  return py > 0.0f ? -length : length;
}

// Classes: 0 filled circle, 1 ring, 2 filled square, 3 square outline, 4 filled triangle,
// 5 plus, 6 X, 7 horizontal bar, 8 vertical bar, 9 filled diamond; s is the half-size and
// w the stroke half-width.
template <int kShape>
DTLAB_HD inline float shapeDistance(float s, float w, float u, float v) {
  if constexpr (kShape == 0) return sqrtf(u * u + v * v) - 0.9f * s;
  if constexpr (kShape == 1) return fabsf(sqrtf(u * u + v * v) - 0.8f * s) - w;
  if constexpr (kShape == 2) return box(u, v, 0.75f * s, 0.75f * s);
  if constexpr (kShape == 3) return fabsf(box(u, v, 0.8f * s, 0.8f * s)) - w;
  if constexpr (kShape == 4) return triangle(u, v, 0.95f * s);
  if constexpr (kShape == 5) return hd::minOf(box(u, v, s, w), box(u, v, w, s));
  if constexpr (kShape == 6) {
    const float a = 0.72f * s;
    return hd::minOf(segment(u, v, -a, -a, a, a), segment(u, v, -a, a, a, -a)) - w;
  }
  if constexpr (kShape == 7) return box(u, v, s, 1.6f * w);
  if constexpr (kShape == 8) return box(u, v, 1.6f * w, s);
  if constexpr (kShape == 9) return (fabsf(u) + fabsf(v) - s) * 0.70710678f;
  return 0.0f;
}

struct Placement {
  float cx;
  float cy;
  float cosine;
  float sine;
  float halfSize;
  float stroke;
  float intensity;
};

// Adds intensity * coverage to every pixel the shape may touch. Coverage falls from 1
// to 0 across the one pixel straddling the edge, an inexpensive antialiasing that keeps
// thin strokes visible at every position.
template <int kShape>
DTLAB_HD inline void paint(const Placement& p, float* image) {
  // The shape lies inside the square of half-side halfSize (times sqrt 2 once rotated),
  // widened by the stroke and the antialiasing pixel.
  const float reach = 1.4143f * p.halfSize + p.stroke + 1.0f;
  const int x0 = hd::maxOf(0, static_cast<int>(floorf(p.cx - reach)));
  const int x1 = hd::minOf(kSide - 1, static_cast<int>(ceilf(p.cx + reach)));
  const int y0 = hd::maxOf(0, static_cast<int>(floorf(p.cy - reach)));
  const int y1 = hd::minOf(kSide - 1, static_cast<int>(ceilf(p.cy + reach)));
  for (int py = y0; py <= y1; ++py) {
    const float dy = static_cast<float>(py) + 0.5f - p.cy;
    float* row = image + py * kSide;
    for (int px = x0; px <= x1; ++px) {
      const float dx = static_cast<float>(px) + 0.5f - p.cx;
      // Rotate the pixel into the shape's frame.
      const float u = p.cosine * dx + p.sine * dy;
      const float v = -p.sine * dx + p.cosine * dy;
      const float distance = shapeDistance<kShape>(p.halfSize, p.stroke, u, v);
      const float coverage = hd::clampOf(0.5f - distance, 0.0f, 1.0f);
      row[px] += p.intensity * coverage;
    }
  }
}

// paint<shape>(): the shape's distance function is picked once per image, not per pixel.
template <int kShape = 0>
DTLAB_HD inline void paintShape(int shape, const Placement& p, float* image) {
  if constexpr (kShape + 1 < kShapeClasses) {
    if (shape != kShape) return paintShape<kShape + 1>(shape, p, image);
  }
  paint<kShape>(p, image);
}

// Shapes: class i % 10 at a random position, size, stroke, small rotation and intensity,
// over pixel noise of std `noise` (approximately Gaussian, not clipped).
DTLAB_HD inline float shapes(const SampleProgram& p, int64_t index, Rng& rng, float* x) {
  const int shape = static_cast<int>(index % kShapeClasses);
  Placement place{};
  place.cx = 0.5f * kSide + rng.uniform(-kMaxShift, kMaxShift);
  place.cy = 0.5f * kSide + rng.uniform(-kMaxShift, kMaxShift);
  const float angle = rng.uniform(-kMaxRotation, kMaxRotation);
  place.cosine = cosf(angle);
  place.sine = sinf(angle);
  place.halfSize = rng.uniform(kMinHalfSize, kMaxHalfSize);
  place.stroke = rng.uniform(kMinStroke, kMaxStroke);
  place.intensity = rng.uniform(kMinIntensity, kMaxIntensity);

  if (p.noise > 0.0f) {
    for (int64_t j = 0; j < kPixels; ++j) x[j] = p.noise * fastNormal(rng);
  } else {
    for (int64_t j = 0; j < kPixels; ++j) x[j] = 0.0f;
  }
  paintShape(shape, place, x);
  return static_cast<float>(shape);
}

}  // namespace detail

// Writes sample `index` of `split` to x (features floats) and returns its label (the class
// as a float) or regression target; p.kind must be kKind. scratch holds scratchFloats(p)
// floats. A loop over many samples calls this, chosen once, rather than generateSample().
template <SampleKind kKind>
DTLAB_HD inline float generateSampleOf(const SampleProgram& p, Split split, int64_t index, float* x,
                                       float* scratch) {
  Rng rng(sampleKey(p.seed, split, index));
  if constexpr (kKind == SampleKind::kBlobs) return detail::blobs(p, index, rng, x);
  if constexpr (kKind == SampleKind::kSpirals) return detail::spirals(p, index, rng, x);
  if constexpr (kKind == SampleKind::kCheckerboard) return detail::checkerboard(p, index, rng, x);
  if constexpr (kKind == SampleKind::kTeacher) return detail::teacher(p, rng, x, scratch);
  if constexpr (kKind == SampleKind::kRegression) return detail::regression(p, rng, x);
  if constexpr (kKind == SampleKind::kShapes) return detail::shapes(p, index, rng, x);
  return 0.0f;
}

// Calls f(std::integral_constant<SampleKind, p.kind>{}): one dispatch on the kind for a loop.
template <typename F>
DTLAB_HD inline decltype(auto) withKind(const SampleProgram& p, F&& f) {
  switch (p.kind) {
    case SampleKind::kBlobs:
      return f(std::integral_constant<SampleKind, SampleKind::kBlobs>{});
    case SampleKind::kSpirals:
      return f(std::integral_constant<SampleKind, SampleKind::kSpirals>{});
    case SampleKind::kCheckerboard:
      return f(std::integral_constant<SampleKind, SampleKind::kCheckerboard>{});
    case SampleKind::kTeacher:
      return f(std::integral_constant<SampleKind, SampleKind::kTeacher>{});
    case SampleKind::kRegression:
      return f(std::integral_constant<SampleKind, SampleKind::kRegression>{});
    case SampleKind::kShapes:
      break;
  }
  return f(std::integral_constant<SampleKind, SampleKind::kShapes>{});
}

// generateSampleOf() for whatever p.kind is.
DTLAB_HD inline float generateSample(const SampleProgram& p, Split split, int64_t index, float* x,
                                     float* scratch) {
  return withKind(p, [&](auto kind) {
    return generateSampleOf<decltype(kind)::value>(p, split, index, x, scratch);
  });
}

}  // namespace datagen
}  // namespace dtlab::core
