#include "core/metrics/event_facts.h"

#include <cstddef>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/common/check.h"
#include "core/common/enum_names.h"

namespace dtlab::core {
namespace {

using nlohmann::json;

// As RunEvent::data holds it; text that is not UTF-8 (a host name, say) is replaced, not
// refused: the facts of a run must not fail it.
std::string dumped(const json& facts) {
  return facts.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The event's data as an object, or null when it has none; `kind` names it in errors.
json dataOf(const RunEvent& event) {
  if (event.data.empty()) return nullptr;
  json data = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (!data.is_object())
    throw Error("the facts of a \"" + event.kind + "\" event at step " +
                std::to_string(event.step) + " are not a JSON object");
  return data;
}

template <typename T>
T field(const json& data, const char* key, const RunEvent& event) {
  const auto it = data.find(key);
  try {
    if (it != data.end()) return it->get<T>();
  } catch (const json::exception&) {
  }
  throw Error("the facts of a \"" + event.kind + "\" event at step " + std::to_string(event.step) +
              " have no valid \"" + key + "\"");
}

}  // namespace

std::string NodeFacts::description() const {
  std::string out = "host " + host + ", DTLab " + version;
  if (!machine.empty()) out += ", " + machine;
  for (const std::string& device : devices) out += "; " + device;
  return out;
}

std::string eventData(const NodeFacts& f) {
  return dumped(json{{"node", f.node},
                     {"label", f.label},
                     {"host", f.host},
                     {"version", f.version},
                     {"machine", f.machine},
                     {"cores", f.cores},
                     {"devices", f.devices}});
}

std::string eventData(const PhaseFacts& f) {
  return dumped({{"asynchronous", f.asynchronous}});
}

std::string eventData(const CollectiveFacts& f) {
  json calls = json::array();
  for (const CollectiveFacts::Call& c : f.calls)
    calls.push_back({{"bytes", c.bytes}, {"algorithm", c.algorithm}, {"ms", c.ms}});
  return dumped({{"bucket_bytes", f.bucketBytes}, {"calls", calls}});
}

std::optional<NodeFacts> nodeFactsOf(const RunEvent& event) {
  if (event.kind != kNodeEvent) return std::nullopt;
  const json data = dataOf(event);
  if (data.is_null()) return std::nullopt;
  NodeFacts f;
  f.node = field<int>(data, "node", event);
  f.label = field<std::string>(data, "label", event);
  f.host = field<std::string>(data, "host", event);
  f.version = field<std::string>(data, "version", event);
  f.machine = field<std::string>(data, "machine", event);
  f.cores = field<int64_t>(data, "cores", event);
  f.devices = field<std::vector<std::string>>(data, "devices", event);
  return f;
}

std::optional<PhaseFacts> phaseFactsOf(const RunEvent& event) {
  if (event.kind != kSwitchEvent && event.kind != kPhaseEvent) return std::nullopt;
  const json data = dataOf(event);
  if (data.is_null()) return std::nullopt;
  return PhaseFacts{field<bool>(data, "asynchronous", event)};
}

std::optional<CollectiveFacts> collectiveFactsOf(const RunEvent& event) {
  if (event.kind != kStartEvent) return std::nullopt;
  const json data = dataOf(event);
  if (data.is_null() || !data.contains("bucket_bytes")) return std::nullopt;
  CollectiveFacts f;
  f.bucketBytes = field<int64_t>(data, "bucket_bytes", event);
  const json calls = field<json>(data, "calls", event);
  if (!calls.is_array())
    throw Error("the facts of a \"start\" event at step " + std::to_string(event.step) +
                " have no valid \"calls\"");
  for (const json& c : calls) {
    if (!c.is_object()) throw Error("a call in the facts of a \"start\" event is not an object");
    CollectiveFacts::Call call;
    call.bytes = field<int64_t>(c, "bytes", event);
    call.algorithm = field<std::string>(c, "algorithm", event);
    call.ms = field<double>(c, "ms", event);
    f.calls.push_back(std::move(call));
  }
  return f;
}

namespace {

constexpr std::pair<NodeLossFacts::Cause, std::string_view> kCauses[] = {
    {NodeLossFacts::Cause::kNoHeartbeat, "no_heartbeat"},
    {NodeLossFacts::Cause::kStreamBroke, "stream_broke"},
};
constexpr std::pair<NodeLossFacts::Outcome, std::string_view> kOutcomes[] = {
    {NodeLossFacts::Outcome::kOthersGoOn, "others_go_on"},
    {NodeLossFacts::Outcome::kRestartsFromCheckpoint, "restarts_from_checkpoint"},
    {NodeLossFacts::Outcome::kGroupRestarts, "group_restarts"},
    {NodeLossFacts::Outcome::kRunFails, "run_fails"},
    {NodeLossFacts::Outcome::kRunHadEnded, "run_had_ended"},
};

template <typename Enum, std::size_t N>
Enum valueOf(const std::pair<Enum, std::string_view> (&names)[N], const json& data, const char* key,
             const RunEvent& event) {
  const std::string text = field<std::string>(data, key, event);
  if (const auto value = enumValue(names, text)) return *value;
  throw Error("the facts of a \"" + event.kind + "\" event at step " + std::to_string(event.step) +
              " have an unknown \"" + key + "\": \"" + text + "\"");
}

}  // namespace

std::string_view toString(NodeLossFacts::Cause cause) {
  return enumName(kCauses, cause, kCauses[0].second);
}
std::string_view toString(NodeLossFacts::Outcome outcome) {
  return enumName(kOutcomes, outcome, kOutcomes[0].second);
}

std::string eventData(const RebalanceFacts& f) {
  return dumped({{"before", f.before},
                 {"after", f.after},
                 {"samples_per_second", f.samplesPerSecond},
                 {"measured_step_ms", f.measuredStepMs},
                 {"expected_step_ms", f.expectedStepMs},
                 {"leave_out", f.leaveOut}});
}

std::string eventData(const NodeLossFacts& f) {
  return dumped({{"rank", f.rank},
                 {"node", f.node},
                 {"cause", toString(f.cause)},
                 {"error", f.error},
                 {"silent_ms", f.silentMs},
                 {"shard", f.shard},
                 {"outcome", toString(f.outcome)}});
}

std::optional<RebalanceFacts> rebalanceFactsOf(const RunEvent& event) {
  if (event.kind != kRebalanceEvent) return std::nullopt;
  const json data = dataOf(event);
  if (data.is_null()) return std::nullopt;
  RebalanceFacts f;
  f.before = field<std::vector<int64_t>>(data, "before", event);
  f.after = field<std::vector<int64_t>>(data, "after", event);
  f.samplesPerSecond = field<std::vector<double>>(data, "samples_per_second", event);
  f.measuredStepMs = field<double>(data, "measured_step_ms", event);
  f.expectedStepMs = field<double>(data, "expected_step_ms", event);
  f.leaveOut = field<int>(data, "leave_out", event);
  if (f.after.size() != f.before.size())
    throw Error("the facts of a \"rebalance\" event at step " + std::to_string(event.step) +
                " give " + std::to_string(f.before.size()) + " shares before and " +
                std::to_string(f.after.size()) + " after");
  return f;
}

std::optional<NodeLossFacts> nodeLossFactsOf(const RunEvent& event) {
  if (event.kind != kNodeLostEvent) return std::nullopt;
  const json data = dataOf(event);
  if (data.is_null()) return std::nullopt;
  NodeLossFacts f;
  f.rank = field<int>(data, "rank", event);
  f.node = field<std::string>(data, "node", event);
  f.cause = valueOf(kCauses, data, "cause", event);
  f.error = field<std::string>(data, "error", event);
  f.silentMs = field<int64_t>(data, "silent_ms", event);
  f.shard = field<int>(data, "shard", event);
  f.outcome = valueOf(kOutcomes, data, "outcome", event);
  return f;
}

}  // namespace dtlab::core
