#pragma once

#include <cstdint>

namespace dtlab::core {

// C = op(A) * op(B), row-major, for C at most kNarrowGemmMaxCols columns wide: the output
// layer of a classifier (its forward, X W with n = classes, and its weight gradient,
// X^T dY). A library GEMM blocks C by register-wide column panels, so a 2-column C wastes
// most of every multiply and still pays the call's fixed cost (about 1 us for 64x2x64 on
// one thread, as long as a 64x64x2 product). Here the k-long dot products themselves are
// vectorised (op(A) not transposed: along A's rows) or C's rows are (op(A) transposed:
// along A's rows of k), on the calling thread. Every element of C sums its k products in
// one fixed order that depends only on k, never on m, so results are reproducible.
inline constexpr int64_t kNarrowGemmMaxCols = 8;

// False (nothing written) where the shape is not one narrowGemm serves: n above
// kNarrowGemmMaxCols, op(A) larger than kNarrowGemmMaxElements, or op(A) = A with k shorter
// than one lane group (the library is faster there).
bool narrowGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// op(A)'s elements (m * k) above which the library's blocking pays again.
inline constexpr int64_t kNarrowGemmMaxElements = int64_t{1} << 16;

// dst (cols x rows, row-major, contiguous) = src^T, src being rows x cols with leading
// dimension ld: in 8x8 register tiles where the target has AVX, element by element at the
// edges (and everywhere without AVX). The CPU backend turns a small A * B^T into A * B with
// it (see CpuBackend::gemm).
void transposeInto(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst);

// Whether transposeInto runs in register tiles on this build's target.
inline constexpr bool kTransposeInRegisters =
#if defined(__AVX__)
    true;
#else
    false;
#endif

}  // namespace dtlab::core
