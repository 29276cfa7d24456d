#include "remote/common/metric_wire.h"

namespace dtlab::remote {
namespace {

template <typename Record>
void pack(const Record& record, google::protobuf::RepeatedField<double>& out) {
  const auto rows = core::metricsOf(core::scopeOf<Record>());
  out.Reserve(static_cast<int>(rows.size()));
  for (const core::MetricInfo* m : rows) out.Add(record.*core::fieldOf<Record>(*m));
}

template <typename Record>
void unpack(const google::protobuf::RepeatedField<double>& in, Record& record) {
  const auto rows = core::metricsOf(core::scopeOf<Record>());
  const std::size_t n = std::min(rows.size(), static_cast<std::size_t>(in.size()));
  for (std::size_t i = 0; i < n; ++i)
    record.*core::fieldOf<Record>(*rows[i]) = in.Get(static_cast<int>(i));
}

}  // namespace

void toProto(const core::StepMetrics& m, proto::StepPoint& out) {
  out.set_worker(m.worker);
  out.set_step(m.step);
  out.set_wall_ms(m.wallMs);
  pack(m, *out.mutable_values());
}

void toProto(const core::EvalMetrics& m, proto::EvalPoint& out) {
  out.set_step(m.step);
  out.set_wall_ms(m.wallMs);
  pack(m, *out.mutable_values());
}

void toProto(const core::NodeMetrics& m, proto::NodeSample& out) {
  out.set_step(m.step);
  out.set_wall_ms(m.wallMs);
  pack(m, *out.mutable_values());
}

core::StepMetrics toCore(const proto::StepPoint& p) {
  core::StepMetrics m;
  m.worker = p.worker();
  m.step = p.step();
  m.wallMs = p.wall_ms();
  unpack(p.values(), m);
  return m;
}

core::EvalMetrics toCore(const proto::EvalPoint& p) {
  core::EvalMetrics m;
  m.step = p.step();
  m.wallMs = p.wall_ms();
  unpack(p.values(), m);
  return m;
}

core::NodeMetrics toCore(const proto::NodeSample& p, int node) {
  core::NodeMetrics m;
  m.node = node;
  m.step = p.step();
  m.wallMs = p.wall_ms();
  unpack(p.values(), m);
  return m;
}

}  // namespace dtlab::remote
