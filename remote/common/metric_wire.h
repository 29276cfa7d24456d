#pragma once

#include "core/metrics/metric_table.h"
#include "remote/proto/dtlab.pb.h"

namespace dtlab::remote {

// Metric records on the wire: the values of every metric of the record's scope, in the
// metric table's order (see dtlab.proto, StepPoint). Unpacking tolerates a shorter list
// (those metrics keep their defaults) and ignores extra values, but both ends come from
// the same table, which protocol_version guarantees.
void toProto(const core::StepMetrics& m, proto::StepPoint& out);
void toProto(const core::EvalMetrics& m, proto::EvalPoint& out);
void toProto(const core::NodeMetrics& m, proto::NodeSample& out);
core::StepMetrics toCore(const proto::StepPoint& p);
core::EvalMetrics toCore(const proto::EvalPoint& p);
// `node` is the rank of the node whose stream carried the sample.
core::NodeMetrics toCore(const proto::NodeSample& p, int node);

}  // namespace dtlab::remote
