#include "core/nn/model_kinds.h"

#include "core/common/registry.h"

namespace dtlab::core {
namespace {

void checkComplete(const ModelKindDescriptor& d) {
  if (!d.make) throw Error("model kind '" + d.name + "' has no make function");
  if (!d.parameterCount) throw Error("model kind '" + d.name + "' has no parameter count");
  if (!d.forwardMacs) throw Error("model kind '" + d.name + "' has no forward cost");
  if (!d.shape) throw Error("model kind '" + d.name + "' has no shape text");
  checkSchema(d.parameters, "model kind '" + d.name + "'");
}

Registry<ModelKindDescriptor>& registry() {
  // Never destroyed: kinds may be looked up during exit.
  static auto* instance =
      new Registry<ModelKindDescriptor>("model kind", checkComplete, builtinModelKinds());
  return *instance;
}

}  // namespace

std::vector<const ModelKindDescriptor*> modelKinds() {
  return registry().all();
}

const ModelKindDescriptor* findModelKind(std::string_view name) {
  return registry().find(name);
}

const ModelKindDescriptor& modelKindOf(const ModelConfig& config) {
  const ModelKindDescriptor* d = findModelKind(config.kind);
  if (d == nullptr) {
    std::vector<std::string> names = modelKindNames();
    throw Error("model kind '" + config.kind +
                "' is not available in this build (it has: " + listText(names) + ")");
  }
  return *d;
}

void registerModelKind(ModelKindDescriptor descriptor) {
  registry().add(std::move(descriptor));
}

std::vector<std::string> modelKindNames() {
  std::vector<std::string> names;
  for (const ModelKindDescriptor* d : modelKinds()) names.push_back(d->name);
  return names;
}

std::unique_ptr<Model> makeModel(Backend& backend, const ModelConfig& config, int64_t inputs,
                                 int64_t outputs, int64_t controlSlots) {
  return modelKindOf(config).make(backend, config, inputs, outputs, controlSlots);
}

int64_t modelParameterCount(const ExperimentSpec& spec) {
  return modelKindOf(spec.model)
      .parameterCount(spec.model, spec.dataset.features, spec.dataset.classes);
}

ModelConfig canonicalModel(const ModelConfig& config) {
  return canonicalKindConfig(config, findModelKind(config.kind));
}

}  // namespace dtlab::core
