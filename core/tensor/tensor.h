#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace dtlab::core {

// Alignment of every tensor buffer: one cache line, and a full AVX-512 vector.
inline constexpr std::size_t kTensorAlignment = 64;

// A float32 matrix in row-major order, owning a 64-byte aligned buffer.
//
// Everything the training core moves is a matrix: a batch of samples is rows x
// features, a dense layer's weight is in x out, a vector is 1 x n. Images are kept
// flattened (28x28 -> 784 features) since the models here are MLPs.
//
// resize() keeps the buffer when the new size fits the capacity, so a training step
// that resizes its activations to the same batch every time allocates only once.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled rows x cols.
  Tensor(int64_t rows, int64_t cols);

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  bool empty() const { return size() == 0; }
  int64_t capacity() const { return capacity_; }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float* row(int64_t r) { return data_.get() + r * cols_; }
  const float* row(int64_t r) const { return data_.get() + r * cols_; }
  float& at(int64_t r, int64_t c) { return data_[r * cols_ + c]; }
  float at(int64_t r, int64_t c) const { return data_[r * cols_ + c]; }
  std::span<float> span() { return {data_.get(), static_cast<std::size_t>(size())}; }
  std::span<const float> span() const { return {data_.get(), static_cast<std::size_t>(size())}; }

  // Changes the shape; reallocates only when rows*cols exceeds the capacity. Contents
  // are unspecified afterwards unless the size is unchanged.
  void resize(int64_t rows, int64_t cols);
  void fill(float value);
  void setZero() { fill(0.0f); }

 private:
  struct AlignedFree {
    void operator()(float* p) const noexcept;
  };
  std::unique_ptr<float[], AlignedFree> data_;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t capacity_ = 0;
};

// Allocates n floats aligned to kTensorAlignment (rounded up to whole cache lines).
float* alignedAllocFloats(int64_t n);
// How many buffers alignedAllocFloats has handed out in this process: tests use it to
// check that a training step allocates nothing after the first.
int64_t alignedAllocCount();
void alignedFree(float* p) noexcept;

}  // namespace dtlab::core
