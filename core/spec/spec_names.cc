#include "core/spec/spec_names.h"

namespace dtlab::core {

using namespace spec_detail;

const char* toString(Activation activation) {
  return nameOf(kActivationNames, activation);
}
const char* toString(InitScheme init) {
  return nameOf(kInitNames, init);
}
const char* toString(LossKind loss) {
  return nameOf(kLossNames, loss);
}
const char* toString(OptimizerKind kind) {
  return nameOf(kOptimizerNames, kind);
}
const char* toString(ScheduleKind kind) {
  return nameOf(kScheduleNames, kind);
}
const char* toString(DataPartitionKind kind) {
  return nameOf(kDataPartitionNames, kind);
}
const char* toString(Precision precision) {
  return nameOf(kPrecisionNames, precision);
}

}  // namespace dtlab::core
