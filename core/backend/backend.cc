// The defaults of the layer kernels a backend may lack.
#include "core/backend/backend.h"

#include "core/common/check.h"

namespace dtlab::core {
namespace {

[[noreturn]] void missing(const Backend& backend, const char* layer) {
  throw Error("the " + backend.name() + " backend has no " + layer +
              " kernels in this build; a model with that layer trains on another backend");
}

}  // namespace

void requireImageLayers(const Backend& backend, const std::string& layer) {
  if (!backend.hasImageLayers()) missing(backend, layer.c_str());
}

void requireSequenceLayers(const Backend& backend, const std::string& layer) {
  if (!backend.hasSequenceLayers()) missing(backend, layer.c_str());
}

void Backend::embeddingForward(const float*, int64_t, int64_t, const float*, const float*, int64_t,
                               int64_t, float*) {
  missing(*this, "embedding");
}

void Backend::embeddingBackward(const float*, int64_t, int64_t, const float*, int64_t, int64_t,
                                float*, float*) {
  missing(*this, "embedding");
}

void Backend::addTo(const float*, int64_t, float*) {
  missing(*this, "residual connection");
}

void Backend::layerNormForward(const float*, int64_t, int64_t, const float*, const float*, float,
                               float*, float*, float*) {
  missing(*this, "layer normalisation");
}

void Backend::layerNormBackward(const float*, const float*, int64_t, int64_t, const float*,
                                const float*, const float*, float*, float*, float*) {
  missing(*this, "layer normalisation");
}

void Backend::attentionForward(const AttentionShape&, const float*, float*, float*) {
  missing(*this, "attention");
}

void Backend::attentionBackward(const AttentionShape&, const float*, const float*, const float*,
                                float*) {
  missing(*this, "attention");
}

void Backend::conv2dForward(const Conv2dShape&, const float*, const float*, const float*, float*) {
  missing(*this, "2-D convolution");
}

void Backend::conv2dBackwardData(const Conv2dShape&, const float*, const float*, float*) {
  missing(*this, "2-D convolution");
}

void Backend::conv2dBackwardWeights(const Conv2dShape&, const float*, const float*, float*,
                                    float*) {
  missing(*this, "2-D convolution");
}

void Backend::pool2dForward(const Pool2dShape&, const float*, float*) {
  missing(*this, "2-D pooling");
}

void Backend::pool2dBackward(const Pool2dShape&, const float*, const float*, const float*, float*) {
  missing(*this, "2-D pooling");
}

}  // namespace dtlab::core
