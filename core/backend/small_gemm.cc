#include "core/backend/small_gemm.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "core/common/simd_lanes.h"

namespace dtlab::core {
namespace {

// op(B)'s columns as N rows of k floats each, zero-padded to whole lane groups.
template <int N>
const float* packColumns(bool transB, const float* b, int64_t ldb, int64_t k, int64_t stride) {
  thread_local std::vector<float> packed;
  packed.assign(static_cast<std::size_t>(N * stride), 0.0f);
  for (int j = 0; j < N; ++j)
    for (int64_t p = 0; p < k; ++p)
      packed[j * stride + p] = transB ? b[j * ldb + p] : b[p * ldb + j];
  return packed.data();
}

// op(A) = A (m x k, rows contiguous): each element of C is one k-long dot product, in lane
// groups along k, then the lanes summed.
template <int N>
void rowsTimesColumns(bool transB, int64_t m, int64_t k, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  const int64_t stride = (k + kLaneCount - 1) / kLaneCount * kLaneCount;
  const float* columns = packColumns<N>(transB, b, ldb, k, stride);
  const int64_t whole = k / kLaneCount * kLaneCount;
  for (int64_t i = 0; i < m; ++i) {
    const float* row = a + i * lda;
    Lanes acc[N] = {};
    for (int64_t p = 0; p < whole; p += kLaneCount) {
      const Lanes x = loadLanes(row + p);
      for (int j = 0; j < N; ++j)
        acc[j] = fusedMultiplyAdd(x, loadLanes(columns + j * stride + p), acc[j]);
    }
    if (whole < k) {  // the rest of the row, zero-padded as the packed columns are
      float rest[kLaneCount] = {};
      std::copy(row + whole, row + k, rest);
      const Lanes x = loadLanes(rest);
      for (int j = 0; j < N; ++j)
        acc[j] = fusedMultiplyAdd(x, loadLanes(columns + j * stride + whole), acc[j]);
    }
    for (int j = 0; j < N; ++j) c[i * ldc + j] = sumOfLanes(acc[j]);
  }
}

// op(A) = A^T (A is k x m): C's rows in lane groups, each lane one row of C, summing over
// A's rows in order; op(B)'s elements broadcast.
template <int N>
void columnsTimesRows(bool transB, int64_t m, int64_t k, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i0 = 0; i0 < m; i0 += kLaneCount) {
    const int64_t rows = std::min(kLaneCount, m - i0);
    Lanes acc[N] = {};
    for (int64_t p = 0; p < k; ++p) {
      Lanes x;
      if (rows == kLaneCount) {
        x = loadLanes(a + p * lda + i0);
      } else {
        float part[kLaneCount] = {};
        std::copy_n(a + p * lda + i0, rows, part);
        x = loadLanes(part);
      }
      for (int j = 0; j < N; ++j) {
        const float bj = transB ? b[j * ldb + p] : b[p * ldb + j];
        acc[j] = fusedMultiplyAdd(x, Lanes{} + bj, acc[j]);
      }
    }
    float out[N][kLaneCount];
    std::memcpy(out, acc, sizeof out);
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < N; ++j) c[(i0 + r) * ldc + j] = out[j][r];
  }
}

template <int N>
void narrow(bool transA, bool transB, int64_t m, int64_t k, const float* a, int64_t lda,
            const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (transA) {
    columnsTimesRows<N>(transB, m, k, a, lda, b, ldb, c, ldc);
  } else {
    rowsTimesColumns<N>(transB, m, k, a, lda, b, ldb, c, ldc);
  }
}

using Kernel = void (*)(bool, bool, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                        float*, int64_t);
template <std::size_t... N>
constexpr auto kernelTable(std::index_sequence<N...>) {
  return std::array<Kernel, sizeof...(N)>{narrow<static_cast<int>(N) + 1>...};
}
constexpr auto kKernels = kernelTable(std::make_index_sequence<kNarrowGemmMaxCols>());

#if defined(__AVX__)
// dst's 8 rows (stride ldd) = the 8x8 tile at src (stride ld), transposed: pairs of rows
// interleaved, then pairs of pairs, then the 128-bit halves exchanged.
void transpose8x8(const float* src, int64_t ld, float* dst, int64_t ldd) {
  __m256 r[8], t[8], s[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(s[i], s[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(s[i], s[i + 4], 0x31));
  }
}
#endif

}  // namespace

void transposeInto(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  int64_t fullRows = 0, fullCols = 0;
#if defined(__AVX__)
  fullRows = rows / 8 * 8;
  fullCols = cols / 8 * 8;
  for (int64_t i = 0; i < fullRows; i += 8)
    for (int64_t j = 0; j < fullCols; j += 8)
      transpose8x8(src + i * ld + j, ld, dst + j * rows + i, rows);
#endif
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = i < fullRows ? fullCols : 0; j < cols; ++j)
      dst[j * rows + i] = src[i * ld + j];
}

bool narrowGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (n < 1 || n > kNarrowGemmMaxCols || m < 1 || m * k > kNarrowGemmMaxElements) return false;
  if (!transA && k < kLaneCount) return false;  // rows shorter than one lane group
  kKernels[static_cast<std::size_t>(n - 1)](transA, transB, m, k, a, lda, b, ldb, c, ldc);
  return true;
}

}  // namespace dtlab::core
