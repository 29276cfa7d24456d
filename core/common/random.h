#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>

#include "core/common/host_device.h"

namespace dtlab::core {

// splitmix64 finaliser: a bijective 64-bit mix with good avalanche.
DTLAB_HD constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Derives an independent 64-bit key from a seed and a path of integers, e.g.
// deriveSeed(seed, kStreamTrain, sampleIndex). Counter-based: the key of sample i
// never depends on any other sample, so any shard can be generated alone.
DTLAB_HD constexpr uint64_t deriveSeed(uint64_t seed) {
  return mix64(seed);
}
template <typename... Rest>
DTLAB_HD constexpr uint64_t deriveSeed(uint64_t seed, uint64_t first, Rest... rest) {
  return deriveSeed(mix64(seed ^ mix64(first + 0x632BE59BD9B4E019ull)),
                    static_cast<uint64_t>(rest)...);
}

// xoshiro256** seeded through splitmix64. Small, fast, and the same on every platform
// (unlike std::normal_distribution, whose output the standard leaves unspecified).
// Everything but gamma() also runs in CUDA kernels, drawing the same numbers there.
class Rng {
 public:
  DTLAB_HD explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& s : s_) {
      x += 0x9E3779B97F4A7C15ull;
      s = mix64(x);
    }
  }

  DTLAB_HD uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 24 random bits (exact in float).
  DTLAB_HD float uniform() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  // Uniform in [lo, hi).
  DTLAB_HD float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias below 2^-32 for n < 2^32).
  DTLAB_HD uint64_t below(uint64_t n) {
#if defined(__CUDA_ARCH__)
    return __umul64hi(next(), n);
#else
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
#endif
  }
  // Standard normal by Box-Muller; the second value is cached.
  // The C library's double functions (::sqrt, ::log, ...) have device versions too.
  DTLAB_HD float normal() {
    if (hasSpare_) {
      hasSpare_ = false;
      return spare_;
    }
    double u1 = 0.0;
    do {
      u1 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    } while (u1 <= 0.0);
    const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
    const double r = ::sqrt(-2.0 * ::log(u1));
    const double theta = 2.0 * kPi * u2;
    spare_ = static_cast<float>(r * ::sin(theta));
    hasSpare_ = true;
    return static_cast<float>(r * ::cos(theta));
  }
  DTLAB_HD float normal(float mean, float stddev) {
    return mean + stddev * normal();
  }
  // Gamma(shape, 1) by Marsaglia-Tsang; used for Dirichlet partitions.
  double gamma(double shape) {
    if (shape < 1.0) {
      const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
      return gamma(shape + 1.0) * std::pow(u > 0.0 ? u : 0x1.0p-53, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = 0.0;
      double v = 0.0;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

 private:
  static constexpr double kPi = 3.14159265358979323846;  // std::numbers::pi, which C++17 lacks
  DTLAB_HD static constexpr uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
  }
  uint64_t s_[4];
  float spare_ = 0.0f;
  bool hasSpare_ = false;
};

}  // namespace dtlab::core
