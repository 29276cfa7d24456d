#include "core/tensor/tensor.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <utility>

#include "core/common/check.h"

namespace dtlab::core {

namespace {
std::atomic<int64_t> allocCount{0};
}

int64_t alignedAllocCount() {
  return allocCount.load(std::memory_order_relaxed);
}

float* alignedAllocFloats(int64_t n) {
  DTLAB_ENFORCE(n >= 0, "negative tensor size ", n);
  if (n == 0) return nullptr;
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
  const std::size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  allocCount.fetch_add(1, std::memory_order_relaxed);
  return static_cast<float*>(p);
}

void alignedFree(float* p) noexcept {
  std::free(p);
}

void Tensor::AlignedFree::operator()(float* p) const noexcept {
  alignedFree(p);
}

Tensor::Tensor(int64_t rows, int64_t cols) {
  resize(rows, cols);
  setZero();
}

Tensor::Tensor(const Tensor& other) {
  resize(other.rows_, other.cols_);
  std::copy_n(other.data(), other.size(), data());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    resize(other.rows_, other.cols_);
    std::copy_n(other.data(), other.size(), data());
  }
  return *this;
}

Tensor::Tensor(Tensor&& other) noexcept
    : data_(std::move(other.data_)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  data_ = std::move(other.data_);
  rows_ = std::exchange(other.rows_, 0);
  cols_ = std::exchange(other.cols_, 0);
  capacity_ = std::exchange(other.capacity_, 0);
  return *this;
}

void Tensor::resize(int64_t rows, int64_t cols) {
  DTLAB_ENFORCE(rows >= 0 && cols >= 0, "bad tensor shape ", rows, "x", cols);
  const int64_t n = rows * cols;
  if (n > capacity_) {
    data_.reset(alignedAllocFloats(n));
    capacity_ = n;
  }
  rows_ = rows;
  cols_ = cols;
}

void Tensor::fill(float value) {
  std::fill_n(data(), size(), value);
}

}  // namespace dtlab::core
