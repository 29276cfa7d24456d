#pragma once
// The CPU backend's convolution and pooling (CpuBackend's conv2d* and pool2d* kernels).
#include <cstdint>
#include <memory>

#include "core/backend/backend.h"

namespace dtlab::core {

// 2-D convolutions through oneDNN's primitives, one forward, backward-data and
// backward-weights primitive per shape, made on first use in the layouts oneDNN prefers
// (blocked, on AVX-512), with reorders from and to the plain NCHW / OIHW layouts the Backend
// interface uses, and kept with their memory objects so a call only swaps data handles. A
// missing bias is a zero vector and a gradient of it nobody wants goes to scratch, so each
// shape has one set of primitives. oneDNN threads them over the OpenMP pool the backend sized.
class DnnlConvolutions {
 public:
  DnnlConvolutions();
  ~DnnlConvolutions();
  DnnlConvolutions(const DnnlConvolutions&) = delete;
  DnnlConvolutions& operator=(const DnnlConvolutions&) = delete;

  void forward(const Conv2dShape& shape, const float* x, const float* w, const float* bias,
               float* y);
  void backwardData(const Conv2dShape& shape, const float* dy, const float* w, float* dx);
  void backwardWeights(const Conv2dShape& shape, const float* x, const float* dy, float* dw,
                       float* dBias);

 private:
  struct Entry;
  struct State;
  Entry& entry(const Conv2dShape& shape);
  std::unique_ptr<State> state_;
};

// Pooling as loops of our own over (image, channel) planes, 2x2 at stride 2 (the cnn's) on a
// path of its own: the pass is memory-bound, a ReLU or tanh before it folds into its backward
// (Pool2dShape::inputActivation), and a maximum's backward finds the pixel again in x instead
// of keeping oneDNN's workspace, so the Backend interface stays free of per-call state.
void poolForwardCpu(const Pool2dShape& shape, const float* x, float* y, int threads);
void poolBackwardCpu(const Pool2dShape& shape, const float* x, const float* y, const float* dy,
                     float* dx, int threads);

}  // namespace dtlab::core
