#include "core/data/dataset_kinds.h"

#include "core/common/registry.h"
#include "core/data/generators.h"

namespace dtlab::core {
namespace {

void checkComplete(const DatasetKindDescriptor& d) {
  if (!d.make) throw Error("dataset kind '" + d.name + "' has no make function");
  const ClassRule& c = d.classes;
  if (c.minimum < 1 || c.minimum > c.maximum || c.defaultValue < c.minimum ||
      c.defaultValue > c.maximum)
    throw Error("dataset kind '" + d.name + "' has a class rule whose default is out of range");
  if (d.task == TaskKind::kRegression && c.maximum != 1)
    throw Error("dataset kind '" + d.name + "' is a regression with more than one output");
  if (d.features.defaultValue < 1)
    throw Error("dataset kind '" + d.name + "' has no features by default");
  if (d.tokens && (d.task != TaskKind::kClassification || !d.targets))
    throw Error("dataset kind '" + d.name + "' has tokens but is no classification with targets");
  if (d.preview == DatasetPreviewKind::kTokens && !d.tokens)
    throw Error("dataset kind '" + d.name + "' previews tokens but has none");
  if (d.preview == DatasetPreviewKind::kImages && !d.layout)
    throw Error("dataset kind '" + d.name + "' previews images but gives no layout");
  checkSchema(d.parameters, "dataset kind '" + d.name + "'");
}

Registry<DatasetKindDescriptor>& registry() {
  // Never destroyed: kinds may be looked up during exit. The built-in kinds, in the order the
  // spec and the GUI list them; the first is the default.
  static auto* instance =
      new Registry<DatasetKindDescriptor>("dataset kind", checkComplete, builtinDatasetKinds());
  return *instance;
}

}  // namespace

std::vector<const DatasetKindDescriptor*> datasetKinds() {
  return registry().all();
}

const DatasetKindDescriptor* findDatasetKind(std::string_view name) {
  return registry().find(name);
}

const DatasetKindDescriptor& datasetKindOf(const DatasetConfig& config) {
  const DatasetKindDescriptor* d = findDatasetKind(config.kind);
  if (d == nullptr)
    throw Error("dataset kind '" + config.kind + "' is not available in this build (it has: " +
                datasetKindList([](const DatasetKindDescriptor&) { return true; }) + ")");
  return *d;
}

void registerDatasetKind(DatasetKindDescriptor descriptor) {
  registry().add(std::move(descriptor));
}

std::vector<std::string> datasetKindNames() {
  std::vector<std::string> names;
  for (const DatasetKindDescriptor* d : datasetKinds()) names.push_back(d->name);
  return names;
}

std::string datasetKindList(const std::function<bool(const DatasetKindDescriptor&)>& pick) {
  std::vector<std::string> names;
  for (const DatasetKindDescriptor* d : datasetKinds())
    if (pick(*d)) names.push_back(d->name);
  return listText(names);
}

DatasetConfig canonicalDataset(const DatasetConfig& config) {
  return canonicalKindConfig(config, findDatasetKind(config.kind));
}

std::unique_ptr<Dataset> makeDataset(const DatasetConfig& config) {
  using datagen::requireConfig;
  requireConfig(config.trainSize >= 1, "trainSize", "needs at least 1 training sample (got ",
                config.trainSize, ")");
  requireConfig(config.testSize >= 0, "testSize", "must not be negative (got ", config.testSize,
                ")");
  return datasetKindOf(config).make(config);
}

SampleShape sampleShapeOf(const DatasetConfig& config) {
  const DatasetKindDescriptor& kind = datasetKindOf(config);
  const int64_t features = kind.features.fixed ? kind.features.defaultValue : config.features;
  const int64_t outputs = kind.task == TaskKind::kRegression ? 1
                          : kind.classes.fixed()             ? kind.classes.defaultValue
                                                             : config.classes;
  const int64_t targets = kind.targets ? kind.targets(config) : 1;
  DTLAB_ENFORCE(targets >= 1, "dataset kind '", kind.name, "' gives ", targets, " targets");
  SampleShape shape{
      features,   {features}, outputs * targets, targets, kind.tokens ? outputs : int64_t{0},
      kind.causal};
  if (kind.layout) {
    shape.dims = kind.layout(config);
    int64_t product = 1;
    for (int64_t d : shape.dims) product *= d;
    DTLAB_ENFORCE(!shape.dims.empty() && product == features, "dataset kind '", kind.name,
                  "' lays out ", product, " floats of its ", features, " features");
  }
  return shape;
}

DatasetConfig defaultDataset(std::string_view kind) {
  const DatasetKindDescriptor* d = findDatasetKind(kind);
  if (d == nullptr) throw Error("dataset kind '" + std::string(kind) + "' is not registered");
  DatasetConfig c;
  c.kind = d->name;
  c.classes = d->classes.defaultValue;
  c.features = d->features.defaultValue;
  for (const SettingSchema& s : d->parameters)
    if (d->view(c).applies(s.key)) c.parameters.set(s.key, s.defaultValue);
  return c;
}

}  // namespace dtlab::core
