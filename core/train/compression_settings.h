#pragma once
// The variant settings of gradient compression (core/comm/gradient_compression.h), which every
// strategy that moves gradients or weights declares, and the tensors of a model it compresses.
#include <cstdint>
#include <vector>

#include "core/comm/gradient_compression.h"
#include "core/spec/settings.h"

namespace dtlab::core {

class Model;

// compression, topk_ratio, powersgd_rank and start_step, in that order. Without `collective`
// (a parameter server's strategies): no powersgd, which factorises the sum over the workers
// with all-reduces, where a server takes each worker's gradient alone.
std::vector<SettingSchema> compressionSettings(bool collective = true);
// The variant's values (a strategy without the settings: none).
CompressionConfig compressionOf(const SettingsView& settings);

// The model's parameter (and gradient) buffer as tensors: each dense layer's weight matrix
// (in rows of out) and its bias, in buffer order.
std::vector<CompressedTensor> modelShapes(const Model& model);

}  // namespace dtlab::core
