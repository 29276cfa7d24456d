#pragma once
// Internal to core/data: the built-in kinds' descriptors, each defined beside its generator and
// listed, in order, by builtinDatasetKinds() (builtin_kinds.cc).
#include "core/data/dataset_kinds.h"

namespace dtlab::core::datagen {

DatasetKindDescriptor gaussianBlobsKind();
DatasetKindDescriptor twoSpiralsKind();
DatasetKindDescriptor checkerboardKind();
DatasetKindDescriptor teacherKind();
DatasetKindDescriptor linearRegressionKind();
DatasetKindDescriptor shapesKind();
DatasetKindDescriptor languageKind();
DatasetKindDescriptor copyKind();

}  // namespace dtlab::core::datagen
