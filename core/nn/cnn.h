#pragma once
// The `cnn` model kind: convolution blocks over images, then a dense classifier.
#include <memory>
#include <vector>

#include "core/nn/layers.h"
#include "core/spec/experiment_spec.h"

namespace dtlab::core {

struct ModelKindDescriptor;
struct SampleShape;

// The layers of the cnn `config` describes for image samples: per block a k x k convolution
// (stride 1, padding k/2: the image keeps its size) with the activation, then a 2 x 2 pooling
// (max or average) that halves it; the first block has `channels` channels and each further
// one twice as many. Then the dense layers of `hidden` with the activation, and a dense output
// layer. Throws SpecError under `path` for a config the samples cannot take.
std::vector<std::unique_ptr<Layer>> cnnLayers(const ModelConfig& config, const SampleShape& samples,
                                              const std::string& path = "model");

ModelKindDescriptor cnnKind();

}  // namespace dtlab::core
