// The CPU backend's token-model kernels: embedding lookup, layer normalisation and the core
// of multi-head self-attention, as loops of our own over rows (tokens) or (sequence, head)
// pairs, shared out among the backend's threads like its other loops (cpu_parallel.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/backend/cpu_backend.h"
#include "core/backend/cpu_parallel.h"
#include "core/common/check.h"

namespace dtlab::core {
namespace {

int64_t tokenOf(const float* ids, int64_t r, int64_t vocabulary) {
  const float id = ids[r];
  if (!(id >= 0.0f && id < static_cast<float>(vocabulary)) || id != std::floor(id))
    throw Error("token " + std::to_string(r) + " is " + std::to_string(id) +
                ", not an id of the vocabulary of " + std::to_string(vocabulary));
  return static_cast<int64_t>(id);
}

// In SIMD lanes (a head's width is tens of floats): the order of the sum is the lanes', the
// same on every run and rank.
float dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += alpha * x
void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

}  // namespace

void CpuBackend::embeddingForward(const float* ids, int64_t rows, int64_t vocabulary,
                                  const float* table, const float* positions, int64_t period,
                                  int64_t width, float* out) {
  for (int64_t r = 0; r < rows; ++r) tokenOf(ids, r, vocabulary);  // all checked, then written
  forRange(rows, rows * width, threads(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* t = table + static_cast<int64_t>(ids[r]) * width;
      const float* p = positions + (r % period) * width;
      float* o = out + r * width;
      for (int64_t c = 0; c < width; ++c) o[c] = t[c] + p[c];
    }
  });
}

void CpuBackend::addTo(const float* x, int64_t count, float* y) {
  forRange(count, count, threads(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] += x[i];
  });
}

void CpuBackend::embeddingBackward(const float* ids, int64_t rows, int64_t vocabulary,
                                   const float* dOut, int64_t period, int64_t width, float* dTable,
                                   float* dPositions) {
  std::fill_n(dTable, vocabulary * width, 0.0f);
  std::fill_n(dPositions, period * width, 0.0f);
  // Serial: rows scatter into shared table rows (a batch's tokens repeat), and the whole pass is
  // a few adds per float of dOut.
  for (int64_t r = 0; r < rows; ++r) {
    const float* d = dOut + r * width;
    axpy(1.0f, d, dTable + tokenOf(ids, r, vocabulary) * width, width);
    axpy(1.0f, d, dPositions + (r % period) * width, width);
  }
}

void CpuBackend::layerNormForward(const float* x, int64_t rows, int64_t width, const float* gain,
                                  const float* bias, float eps, float* y, float* mean,
                                  float* rstd) {
  forRange(rows, rows * width, threads(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * width;
      double sum = 0.0;
      for (int64_t c = 0; c < width; ++c) sum += xr[c];
      const auto m = static_cast<float>(sum / static_cast<double>(width));
      double squares = 0.0;
      for (int64_t c = 0; c < width; ++c) squares += (xr[c] - m) * (xr[c] - m);
      const float s =
          1.0f / std::sqrt(static_cast<float>(squares / static_cast<double>(width)) + eps);
      float* yr = y + r * width;
      for (int64_t c = 0; c < width; ++c) yr[c] = (xr[c] - m) * s * gain[c] + bias[c];
      mean[r] = m;
      rstd[r] = s;
    }
  });
}

void CpuBackend::layerNormBackward(const float* x, const float* dy, int64_t rows, int64_t width,
                                   const float* gain, const float* mean, const float* rstd,
                                   float* dx, float* dGain, float* dBias) {
  forRange(rows, rows * width, threads(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * width;
      const float* dyr = dy + r * width;
      // dx = rstd * (g dy - mean(g dy) - xhat mean(g dy xhat))
      float sumG = 0.0f, sumGx = 0.0f;
      for (int64_t c = 0; c < width; ++c) {
        const float g = gain[c] * dyr[c];
        sumG += g;
        sumGx += g * (xr[c] - mean[r]) * rstd[r];
      }
      const float n = static_cast<float>(width);
      float* dxr = dx + r * width;
      for (int64_t c = 0; c < width; ++c) {
        const float xhat = (xr[c] - mean[r]) * rstd[r];
        dxr[c] = rstd[r] * (gain[c] * dyr[c] - sumG / n - xhat * sumGx / n);
      }
    }
  });
  std::fill_n(dGain, width, 0.0f);
  std::fill_n(dBias, width, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * width;
    const float* dyr = dy + r * width;
    for (int64_t c = 0; c < width; ++c) {
      dGain[c] += dyr[c] * (xr[c] - mean[r]) * rstd[r];
      dBias[c] += dyr[c];
    }
  }
}

void CpuBackend::attentionForward(const AttentionShape& s, const float* qkv, float* probabilities,
                                  float* out) {
  const int64_t t = s.tokens, dh = s.headWidth(), stride = 3 * s.width;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const int64_t pairs = s.batch * s.heads;
  forRange(pairs, pairs * t * t * dh, threads(), [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / s.heads, h = pair % s.heads;
      const float* base = qkv + b * t * stride + h * dh;  // this head's query of token 0
      float* p = probabilities + pair * t * t;
      for (int64_t i = 0; i < t; ++i) {
        const float* q = base + i * stride;
        float* pi = p + i * t;
        const int64_t seen = s.causal ? i + 1 : t;
        float top = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < seen; ++j) {
          pi[j] = scale * dot(q, base + j * stride + s.width, dh);
          top = std::max(top, pi[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < seen; ++j) sum += pi[j] = std::exp(pi[j] - top);
        for (int64_t j = 0; j < seen; ++j) pi[j] /= sum;
        std::fill(pi + seen, pi + t, 0.0f);
        float* o = out + (b * t + i) * s.width + h * dh;
        std::fill_n(o, dh, 0.0f);
        for (int64_t j = 0; j < seen; ++j) axpy(pi[j], base + j * stride + 2 * s.width, o, dh);
      }
    }
  });
}

void CpuBackend::attentionBackward(const AttentionShape& s, const float* qkv,
                                   const float* probabilities, const float* dOut, float* dQkv) {
  const int64_t t = s.tokens, dh = s.headWidth(), stride = 3 * s.width;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const int64_t pairs = s.batch * s.heads;
  forRange(pairs, pairs * t * t * dh, threads(), [&](int64_t begin, int64_t end) {
    std::vector<float> dp(static_cast<std::size_t>(t));
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t b = pair / s.heads, h = pair % s.heads;
      const float* base = qkv + b * t * stride + h * dh;
      float* dBase = dQkv + b * t * stride + h * dh;
      const float* p = probabilities + pair * t * t;
      for (int64_t i = 0; i < t; ++i)
        for (int64_t part = 0; part < 3; ++part)
          std::fill_n(dBase + i * stride + part * s.width, dh, 0.0f);
      for (int64_t i = 0; i < t; ++i) {
        const float* pi = p + i * t;
        const float* dOi = dOut + (b * t + i) * s.width + h * dh;
        const int64_t seen = s.causal ? i + 1 : t;
        // dP_ij = dO_i . v_j; dv_j += p_ij dO_i; dS_ij = p_ij (dP_ij - sum_k p_ik dP_ik).
        float weighted = 0.0f;
        for (int64_t j = 0; j < seen; ++j) {
          dp[static_cast<std::size_t>(j)] = dot(dOi, base + j * stride + 2 * s.width, dh);
          weighted += pi[j] * dp[static_cast<std::size_t>(j)];
          axpy(pi[j], dOi, dBase + j * stride + 2 * s.width, dh);
        }
        const float* qi = base + i * stride;
        float* dqi = dBase + i * stride;
        for (int64_t j = 0; j < seen; ++j) {
          const float ds = scale * pi[j] * (dp[static_cast<std::size_t>(j)] - weighted);
          axpy(ds, base + j * stride + s.width, dqi, dh);  // dq_i += ds k_j
          axpy(ds, qi, dBase + j * stride + s.width, dh);  // dk_j += ds q_i
        }
      }
    }
  });
}

}  // namespace dtlab::core
