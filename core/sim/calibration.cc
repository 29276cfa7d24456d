#include "core/sim/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/common/check.h"
#include "core/common/statistics.h"

namespace dtlab::core::sim {
namespace {

// A step this far beyond the line (relative), and beyond 6 robust sds, is a pause, not spread.
constexpr double kPauseShare = 0.25;
constexpr double kPauseSds = 6.0;
// The quantiles a compute fit's shape keeps (fewer where it saw fewer steps).
constexpr std::size_t kShapePoints = 100;
constexpr double kLeastShape = 0.05;  // no step is taken as faster than this share of the line

double robustSd(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  const double mid = median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::abs(v - mid));
  return 1.4826 * median(deviations);
}

nlohmann::json toJson(const ComputeFit& f) {
  nlohmann::json j = {{"fixed_ms", f.fixedMs},       {"ms_per_sample", f.msPerSample},
                      {"spread", f.spread},          {"pause_probability", f.pauseProbability},
                      {"pause_ms", f.pauseMs},       {"steps", f.steps},
                      {"batch_sizes", f.batchSizes}, {"contended", f.contended}};
  if (!f.label.empty()) j["label"] = f.label;
  if (!f.shape.empty()) j["shape"] = f.shape;
  return j;
}

nlohmann::json toJson(const LinkFit& f) {
  return {{"latency_ms", f.latencyMs},
          {"bandwidth_mbps", f.bandwidthMbps},
          {"latency_separated", f.latencySeparated},
          {"spread", f.spread},
          {"observations", f.observations}};
}

// A field of a stored calibration, with its place in errors.
template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw Error(where + ": the calibration has no \"" + key + "\"");
  try {
    const T value = j.at(key).get<T>();
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(value) || value < 0)
        throw Error(where + "." + key + ": expected a finite number >= 0");
    return value;
  } catch (const nlohmann::json::exception&) {
    throw Error(where + "." + key + ": " + std::string("wrong type (") + j.at(key).type_name() +
                ")");
  }
}

ComputeFit computeFromJson(const nlohmann::json& j, const std::string& where) {
  ComputeFit f;
  if (j.is_object() && j.contains("label")) f.label = field<std::string>(j, "label", where);
  f.fixedMs = field<double>(j, "fixed_ms", where);
  f.msPerSample = field<double>(j, "ms_per_sample", where);
  f.spread = field<double>(j, "spread", where);
  f.pauseProbability = field<double>(j, "pause_probability", where);
  if (f.pauseProbability > 1.0) throw Error(where + ".pause_probability: expected at most 1");
  f.pauseMs = field<double>(j, "pause_ms", where);
  f.steps = field<int64_t>(j, "steps", where);
  f.batchSizes = field<std::vector<double>>(j, "batch_sizes", where);
  f.contended = field<bool>(j, "contended", where);
  if (j.contains("shape")) {  // optional: calibrations before it have none
    f.shape = field<std::vector<double>>(j, "shape", where);
    for (std::size_t i = 0; i < f.shape.size(); ++i)
      if (!std::isfinite(f.shape[i]) || f.shape[i] <= 0.0 || (i > 0 && f.shape[i] < f.shape[i - 1]))
        throw Error(where + ".shape[" + std::to_string(i) +
                    "]: expected ascending numbers > 0 (a step's compute relative to the line)");
  }
  if (!(f.fixedMs + f.msPerSample > 0.0))
    throw Error(where + ": a compute fit of zero time per step");
  return f;
}

LinkFit linkFromJson(const nlohmann::json& j, const std::string& where) {
  LinkFit f;
  f.latencyMs = field<double>(j, "latency_ms", where);
  f.bandwidthMbps = field<double>(j, "bandwidth_mbps", where);
  f.latencySeparated = field<bool>(j, "latency_separated", where);
  f.spread = field<double>(j, "spread", where);
  f.observations = field<int64_t>(j, "observations", where);
  return f;
}

std::string fitLine(const ComputeFit& f) {
  char text[256];
  std::snprintf(text, sizeof text,
                "%.3f ms + %.4f ms/sample (spread %.0f%%, pauses %.1f%% of steps at %.1f ms; %lld "
                "steps at %zu batch size%s)%s",
                f.fixedMs, f.msPerSample, 100.0 * f.spread, 100.0 * f.pauseProbability, f.pauseMs,
                static_cast<long long>(f.steps), f.batchSizes.size(),
                f.batchSizes.size() == 1 ? "" : "s", f.contended ? ", cores contended" : "");
  std::string line = text;
  if (!f.shape.empty()) {  // what the simulator's draws average to
    double sum = 0.0;
    for (double v : f.shape) sum += v;
    std::snprintf(text, sizeof text, ", mean step x%.2f the line",
                  sum / static_cast<double>(f.shape.size()));
    line += text;
  }
  return line;
}

std::string linkLine(const LinkFit& f) {
  if (!f.measured()) return "not measured";
  char text[200];
  std::snprintf(text, sizeof text, "latency %.3f ms%s, %.1f Mbit/s (spread %.0f%%, %lld workers)",
                f.latencyMs, f.latencySeparated ? "" : " (not separable: taken as 0)",
                f.bandwidthMbps, 100.0 * f.spread, static_cast<long long>(f.observations));
  return text;
}

}  // namespace

LinkModel LinkFit::model() const {
  LinkModel m;
  m.latencyS = latencyMs * 1e-3;
  m.bytesPerS = bandwidthMbps > 0.0 ? bandwidthMbps * 1e6 / 8.0 : 1e15;
  return m;
}

ComputeFit fitCompute(const std::vector<const ComputeObservation*>& observations,
                      const std::string& label, const std::string& what,
                      std::vector<std::string>* notes) {
  ComputeFit f;
  f.label = label;
  // Per observation: its median (steps of one share), weighted by its steps.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::map<double, int64_t> sizes;
  for (const ComputeObservation* o : observations) {
    if (o->msAtSpeed.empty() || !(o->samples > 0)) continue;
    const double w = static_cast<double>(o->msAtSpeed.size());
    const double y = median(o->msAtSpeed);
    sw += w;
    sx += w * o->samples;
    sy += w * y;
    sxx += w * o->samples * o->samples;
    sxy += w * o->samples * y;
    sizes[o->samples] += static_cast<int64_t>(w);
    f.steps += static_cast<int64_t>(w);
    f.contended = f.contended || o->contended;
  }
  const std::string& name = what;
  if (sw == 0) throw Error("no compute measured for " + name);
  for (const auto& [samples, steps] : sizes) f.batchSizes.push_back(samples);
  const double det = sw * sxx - sx * sx;
  if (sizes.size() >= 2 && det > 1e-12 * sw * sxx) {
    f.msPerSample = (sw * sxy - sx * sy) / det;
    f.fixedMs = (sy - f.msPerSample * sx) / sw;
  }
  if (sizes.size() < 2 || f.fixedMs < 0.0 || f.msPerSample < 0.0) {
    // One batch size, or a line that does not hold: time proportional to samples.
    f.fixedMs = 0.0;
    f.msPerSample = sxy / sxx;
    if (notes != nullptr && sizes.size() < 2)
      notes->push_back(name + ": compute measured at one batch size only (" +
                       std::to_string(static_cast<int64_t>(f.batchSizes.front())) +
                       " samples): taken proportional to samples, with no fixed cost per step");
  }
  // Spread and pauses, relative to the line.
  std::vector<double> relative;
  for (const ComputeObservation* o : observations)
    for (double ms : o->msAtSpeed) relative.push_back(ms / f.ms(o->samples) - 1.0);
  const double sd = robustSd(relative);
  f.spread = sd;
  std::vector<double> excess;
  std::size_t i = 0;
  for (const ComputeObservation* o : observations)
    for (double ms : o->msAtSpeed) {
      if (relative[i++] > std::max(kPauseShare, kPauseSds * sd))
        excess.push_back(ms - f.ms(o->samples));
    }
  if (!excess.empty()) {
    f.pauseProbability = static_cast<double>(excess.size()) / static_cast<double>(relative.size());
    f.pauseMs = median(excess);
  }
  // The whole distribution, as quantiles at the middles of equal shares of the steps.
  std::sort(relative.begin(), relative.end());
  const std::size_t points = std::min(kShapePoints, relative.size());
  for (std::size_t k = 0; k < points; ++k) {
    const auto at = static_cast<std::size_t>((static_cast<double>(k) + 0.5) *
                                             static_cast<double>(relative.size()) /
                                             static_cast<double>(points));
    f.shape.push_back(std::max(kLeastShape, 1.0 + relative[std::min(at, relative.size() - 1)]));
  }
  return f;
}

std::optional<CpuFit> fitCpu(const std::vector<CpuObservation>& observations,
                             const std::string& strategy) {
  CpuFit f;
  f.label = strategy;
  bool remote = false;  // observations of runs that called other nodes
  for (const CpuObservation& o : observations)
    remote = remote || (o.strategy == strategy && o.nodes >= 2 && o.weight > 0);
  double sum = 0.0, weights = 0.0;
  for (const CpuObservation& o : observations) {
    if (o.strategy != strategy || o.weight <= 0 || (remote && o.nodes < 2)) continue;
    if (!(o.coreMs >= 0.0) || !(o.computeCoreMs >= 0.0)) continue;
    sum += static_cast<double>(o.weight) * (o.coreMs - o.computeCoreMs);
    weights += static_cast<double>(o.weight);
    f.computeThreads = std::max(f.computeThreads, o.threads);
    f.fromNodes = f.fromNodes == 0 ? o.nodes : std::min(f.fromNodes, o.nodes);
    ++f.observations;
  }
  if (f.observations == 0) return std::nullopt;
  f.callsMs = std::max(0.0, sum / weights);
  return f;
}

LinkFit fitLink(const std::vector<TransferObservation>& observations, const std::string& path,
                std::vector<std::string>* notes, std::optional<double> latencyMs) {
  LinkFit f;
  // Normal equations of ms = a m + b x (a: ms per message, b: ms per byte), weighted by steps.
  double mm = 0, mx = 0, xx = 0, mt = 0, xt = 0;
  for (const TransferObservation& o : observations) {
    if (o.steps <= 0 || !(o.bytes > 0)) continue;
    const double w = static_cast<double>(o.steps);
    mm += w * o.messages * o.messages;
    mx += w * o.messages * o.bytes;
    xx += w * o.bytes * o.bytes;
    mt += w * o.messages * o.ms;
    xt += w * o.bytes * o.ms;
    ++f.observations;
  }
  if (f.observations == 0) return f;
  double a = 0.0, b = xt / xx;
  const double det = mm * xx - mx * mx;
  if (latencyMs) {
    // The time beyond the given latency is bandwidth; none left: all of it latency.
    a = std::max(0.0, *latencyMs);
    b = (xt - a * mx) / xx;
    if (b <= 0.0) {
      b = 0.0;
      a = mt / mm;
    }
    f.latencySeparated = true;
  } else if (det > 1e-6 * mm * xx) {
    // Collinear (one ratio of messages to bytes): the latency cannot be told from the bandwidth.
    a = (mt * xx - mx * xt) / det;
    b = (mm * xt - mx * mt) / det;
    if (a < 0.0) {
      a = 0.0;
      b = xt / xx;
    } else if (b <= 0.0) {
      b = 0.0;
      a = mt / mm;
    }
    f.latencySeparated = true;
  } else if (notes != nullptr) {
    notes->push_back(path +
                     ": every observation had the same messages per byte, so latency and "
                     "bandwidth cannot be told apart; the whole transfer is taken as bandwidth "
                     "(calibrate with runs of other node counts or model sizes to separate them)");
  }
  f.latencyMs = a;
  // 8e-3 / (ms per byte) = Mbit/s; a transfer of no byte cost: latency only.
  f.bandwidthMbps = b > 0.0 ? 8e-3 / b : 1e9;
  // Relative rms residual, over the weighted observations.
  double residual = 0.0, total = 0.0;
  for (const TransferObservation& o : observations) {
    if (o.steps <= 0 || !(o.bytes > 0)) continue;
    const double e = o.ms - (a * o.messages + b * o.bytes);
    residual += static_cast<double>(o.steps) * e * e;
    total += static_cast<double>(o.steps) * o.ms * o.ms;
  }
  f.spread = total > 0.0 ? std::sqrt(residual / total) : 0.0;
  return f;
}

nlohmann::json Calibration::toJson() const {
  nlohmann::json nodeFits = nlohmann::json::array();
  for (const ComputeFit& n : nodes) nodeFits.push_back(sim::toJson(n));
  nlohmann::json strategyFits = nlohmann::json::array();
  for (const ComputeFit& n : strategies) strategyFits.push_back(sim::toJson(n));
  nlohmann::json cpuFits = nlohmann::json::array();
  for (const CpuFit& f : cpu)
    cpuFits.push_back({{"label", f.label},
                       {"calls_ms", f.callsMs},
                       {"compute_threads", f.computeThreads},
                       {"observations", f.observations},
                       {"from_nodes", f.fromNodes}});
  return {{"experiment", experiment},
          {"runs", runs},
          {"compute", sim::toJson(pooled)},
          {"nodes", nodeFits},
          {"strategies", strategyFits},
          {"collective", sim::toJson(collective)},
          {"parameter_server", sim::toJson(parameterServer)},
          {"bucket_bytes", bucketBytes},
          {"hand_off_shares", handOffShares},
          {"hand_off_rows", handOffRows},
          {"clock_check_ms", clockCheckMs},
          {"host_cores", hostCores},
          {"cpu", cpuFits},
          {"notes", notes}};
}

Calibration Calibration::fromJson(const nlohmann::json& json, const std::string& where) {
  if (!json.is_object()) throw Error(where + ": a calibration must be a JSON object");
  Calibration c;
  c.experiment = field<std::string>(json, "experiment", where);
  c.runs = field<std::vector<int64_t>>(json, "runs", where);
  c.pooled = computeFromJson(field<nlohmann::json>(json, "compute", where), where + ".compute");
  const auto nodeFits = field<nlohmann::json>(json, "nodes", where);
  if (!nodeFits.is_array()) throw Error(where + ".nodes: expected an array");
  for (std::size_t i = 0; i < nodeFits.size(); ++i)
    c.nodes.push_back(computeFromJson(nodeFits[i], where + ".nodes[" + std::to_string(i) + "]"));
  const auto strategyFits = field<nlohmann::json>(json, "strategies", where);
  if (!strategyFits.is_array()) throw Error(where + ".strategies: expected an array");
  for (std::size_t i = 0; i < strategyFits.size(); ++i)
    c.strategies.push_back(
        computeFromJson(strategyFits[i], where + ".strategies[" + std::to_string(i) + "]"));
  c.collective =
      linkFromJson(field<nlohmann::json>(json, "collective", where), where + ".collective");
  c.parameterServer = linkFromJson(field<nlohmann::json>(json, "parameter_server", where),
                                   where + ".parameter_server");
  c.bucketBytes = field<int64_t>(json, "bucket_bytes", where);
  if (c.bucketBytes < 0) throw Error(where + ".bucket_bytes: expected >= 0");
  if (json.contains("hand_off_shares")) {  // optional: not measured
    c.handOffShares = field<std::vector<double>>(json, "hand_off_shares", where);
    for (std::size_t i = 0; i < c.handOffShares.size(); ++i)
      if (!(c.handOffShares[i] >= 0.0 && c.handOffShares[i] <= 1.0))
        throw Error(where + ".hand_off_shares[" + std::to_string(i) +
                    "]: expected a share in [0, 1]");
    c.handOffRows = field<int64_t>(json, "hand_off_rows", where);
  }
  if (json.contains("clock_check_ms"))  // optional: not measured
    c.clockCheckMs = field<double>(json, "clock_check_ms", where);
  if (json.contains("host_cores")) {  // optional: not said
    c.hostCores = field<std::map<std::string, int>>(json, "host_cores", where);
    for (const auto& [host, cores] : c.hostCores)
      if (cores < 1) throw Error(where + ".host_cores." + host + ": expected at least 1 core");
  }
  if (json.contains("cpu")) {  // optional: not recorded
    const auto cpuFits = field<nlohmann::json>(json, "cpu", where);
    if (!cpuFits.is_array()) throw Error(where + ".cpu: expected an array");
    for (std::size_t i = 0; i < cpuFits.size(); ++i) {
      const std::string at = where + ".cpu[" + std::to_string(i) + "]";
      CpuFit f;
      f.label = field<std::string>(cpuFits[i], "label", at);
      f.callsMs = field<double>(cpuFits[i], "calls_ms", at);
      f.computeThreads = field<int>(cpuFits[i], "compute_threads", at);
      if (f.computeThreads < 1) throw Error(at + ".compute_threads: expected at least 1");
      f.observations = field<int64_t>(cpuFits[i], "observations", at);
      f.fromNodes = field<int>(cpuFits[i], "from_nodes", at);
      c.cpu.push_back(f);
    }
  }
  c.notes = field<std::vector<std::string>>(json, "notes", where);
  return c;
}

std::string Calibration::describe() const {
  std::string out = "compute at full speed, every node: " + fitLine(pooled) + "\n";
  if (nodes.size() > 1)
    for (const ComputeFit& n : nodes) out += "  node " + n.label + ": " + fitLine(n) + "\n";
  for (const ComputeFit& n : strategies) out += "  " + n.label + ": " + fitLine(n) + "\n";
  out += "all-reduce link: " + linkLine(collective) + "\n";
  out += "parameter-server link: " + linkLine(parameterServer) + "\n";
  if (clockCheckMs > 0.0) {
    char text[96];
    std::snprintf(text, sizeof text, "bounded-staleness clock check: %.3f ms a step\n",
                  clockCheckMs);
    out += text;
  }
  if (!hostCores.empty()) {
    out += "hosts:";
    for (const auto& [host, cores] : hostCores)
      out += " " + host + " (" + std::to_string(cores) + " cores)";
    out += "\n";
  }
  if (!cpu.empty()) out += "CPU work of a node:\n";
  for (const CpuFit& f : cpu) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "  %s: its compute's (%d thread%s) + %.3f core-ms a step (%lld nodes of runs "
                  "on %d+ nodes)\n",
                  f.label.c_str(), f.computeThreads, f.computeThreads == 1 ? "" : "s", f.callsMs,
                  static_cast<long long>(f.observations), f.fromNodes);
    out += text;
  }
  if (bucketBytes > 0) out += "gradient buckets: " + std::to_string(bucketBytes / 1024) + " KiB\n";
  if (!handOffShares.empty()) {
    out += "backward hands its gradient blocks over at";
    char share[16];
    for (double s : handOffShares) {
      std::snprintf(share, sizeof share, " %.0f%%", 100.0 * s);
      out += share;
    }
    out += " of a step (timed here at " + std::to_string(handOffRows) + " samples)\n";
  }
  for (const std::string& note : notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace dtlab::core::sim
