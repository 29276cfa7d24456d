// The model kinds this build comes with; the first is the default. Kept apart from the
// registry, which every kind's own file may include, so that the registry includes no kind.
#include "core/nn/cnn.h"
#include "core/nn/mlp.h"
#include "core/nn/model_kinds.h"
#include "core/nn/transformer.h"

namespace dtlab::core {

std::vector<ModelKindDescriptor> builtinModelKinds() {
  return {mlpKind(), cnnKind(), transformerKind()};
}

}  // namespace dtlab::core
