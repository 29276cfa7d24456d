#include "core/data/builtin_kinds.h"

namespace dtlab::core {

std::vector<DatasetKindDescriptor> builtinDatasetKinds() {
  return {datagen::gaussianBlobsKind(),    datagen::twoSpiralsKind(),
          datagen::checkerboardKind(),     datagen::teacherKind(),
          datagen::linearRegressionKind(), datagen::shapesKind(),
          datagen::languageKind(),         datagen::copyKind()};
}

}  // namespace dtlab::core
