#include "core/sim/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/common/check.h"

namespace dtlab::core::sim {
namespace {

double number(const nlohmann::json& j, const char* key, double fallback, double min,
              const std::string& where) {
  if (!j.contains(key)) return fallback;
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < min) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", min);
    throw Error(where + "." + key + ": expected a number of at least " + text + ", got " +
                v.dump());
  }
  return v.get<double>();
}

void onlyKeys(const nlohmann::json& j, std::initializer_list<const char*> keys,
              const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a JSON object");
  for (const auto& item : j.items()) {
    const std::string key = item.key();
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; }))
      throw Error(where + ": unknown field \"" + key + "\"");
  }
}

}  // namespace

Topology Topology::fromJson(const nlohmann::json& json, const std::string& where) {
  onlyKeys(json, {"levels", "speeds"}, where);
  Topology t;
  if (json.contains("levels")) {
    if (!json.at("levels").is_array()) throw Error(where + ".levels: expected an array");
    for (std::size_t i = 0; i < json.at("levels").size(); ++i) {
      const std::string at = where + ".levels[" + std::to_string(i) + "]";
      const nlohmann::json& l = json.at("levels")[i];
      onlyKeys(l, {"fanout", "bandwidth_mbps", "oversubscription", "latency_ms"}, at);
      if (!l.contains("fanout")) throw Error(at + ": needs \"fanout\" (children per switch)");
      TopologyLevel level;
      const double fanout = number(l, "fanout", 1, 1, at);
      if (fanout != std::floor(fanout) || fanout > 1e6)
        throw Error(at + ".fanout: expected a whole number up to 1000000");
      level.fanout = static_cast<int>(fanout);
      level.bandwidthMbps = number(l, "bandwidth_mbps", 0.0, 1e-3, at);
      level.oversubscription = number(l, "oversubscription", 1.0, 1.0, at);
      level.latencyMs = number(l, "latency_ms", 0.0, 0.0, at);
      t.levels.push_back(level);
    }
  }
  if (json.contains("speeds")) {
    if (!json.at("speeds").is_array()) throw Error(where + ".speeds: expected an array");
    double total = 0.0;
    for (std::size_t i = 0; i < json.at("speeds").size(); ++i) {
      const std::string at = where + ".speeds[" + std::to_string(i) + "]";
      const nlohmann::json& s = json.at("speeds")[i];
      onlyKeys(s, {"share", "speed"}, at);
      if (!s.contains("share") || !s.contains("speed"))
        throw Error(at + ": needs \"share\" (of the nodes) and \"speed\"");
      SpeedShare share{number(s, "share", 0, 0, at), number(s, "speed", 1, 1e-3, at)};
      if (share.share > 1.0) throw Error(at + ".share: expected a share in [0, 1]");
      total += share.share;
      t.speeds.push_back(share);
    }
    if (total > 1.0 + 1e-9)
      throw Error(where + ".speeds: the shares add up to " + std::to_string(total) +
                  ", more than every node");
  }
  return t;
}

Topology Topology::fromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read it");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path + ": not JSON (" + e.what() + ")");
  }
  return fromJson(json, path);
}

double Topology::speedOf(int index, int nodes) const {
  // The shares take the nodes in turn: the first share's the first nodes, and so on.
  const double position = (static_cast<double>(index) + 0.5) / static_cast<double>(nodes);
  double from = 0.0;
  for (const SpeedShare& s : speeds) {
    if (position >= from && position < from + s.share) return s.speed;
    from += s.share;
  }
  return 0.0;
}

std::string Topology::describe() const {
  std::string out;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const TopologyLevel& l = levels[i];
    char text[160];
    if (i == 0)
      std::snprintf(text, sizeof text, "%d nodes a switch", l.fanout);
    else
      std::snprintf(text, sizeof text, ", %d of those under a level-%zu switch", l.fanout, i);
    out += text;
    if (l.bandwidthMbps > 0)
      out += " at " + std::to_string(std::lround(l.bandwidthMbps)) + " Mbit/s";
    if (l.oversubscription > 1.0) {
      std::snprintf(text, sizeof text, " %.3g:1 oversubscribed", l.oversubscription);
      out += text;
    }
  }
  for (const SpeedShare& s : speeds) {
    char text[96];
    std::snprintf(text, sizeof text, "%s%.0f%% of nodes at %.3g", out.empty() ? "" : "; ",
                  100.0 * s.share, s.speed);
    out += text;
  }
  return out.empty() ? "one switch" : out;
}

LinkModel effectiveLink(const LinkModel& nic, const Topology& topology, int nodes,
                        TrafficPattern pattern) {
  LinkModel link = nic;
  if (topology.levels.empty() || nodes <= 1) return link;
  double childBytesPerS = topology.levels[0].bandwidthMbps > 0
                              ? topology.levels[0].bandwidthMbps * 1e6 / 8.0
                              : nic.bytesPerS;
  double bytesPerS = childBytesPerS;  // what a node can send
  double below = 1.0;                 // nodes under one switch of this level
  double pathLatency = 0.0;           // up and down through the levels crossed so far
  double meanLatency = 0.0;           // all-to-all: over destinations
  double worstLatency = 0.0;          // ring: the highest level crossed
  for (std::size_t k = 0; k < topology.levels.size(); ++k) {
    const TopologyLevel& level = topology.levels[k];
    if (k > 0 && level.bandwidthMbps > 0) childBytesPerS = level.bandwidthMbps * 1e6 / 8.0;
    const double under = below * level.fanout;  // nodes under one switch of level k
    // Reaching another child of this switch crosses it: its latency and what lies below.
    const double cross = level.latencyMs * 1e-3 + 2.0 * pathLatency;
    const double inside = std::min(1.0, under / nodes) - std::min(1.0, below / nodes);
    meanLatency += std::max(0.0, inside) * cross;
    if (nodes > below) worstLatency = cross;
    // The switch's uplink, when the cluster spans more than one switch of this level.
    const double uplink = level.fanout * childBytesPerS / level.oversubscription;
    if (nodes > under) {
      if (pattern == TrafficPattern::kRing) {
        bytesPerS = std::min(bytesPerS, uplink);
      } else {
        const double leaving = under * (1.0 - under / nodes);  // nodes' worth of traffic
        bytesPerS = std::min(bytesPerS, uplink / leaving);
      }
    }
    pathLatency += level.latencyMs * 1e-3;
    childBytesPerS = uplink;
    below = under;
  }
  if (nodes > below) {  // more nodes than the tree holds: the top level joins them all
    const double cross = 2.0 * pathLatency;
    meanLatency += (1.0 - below / nodes) * cross;
    worstLatency = cross;
  }
  link.bytesPerS = bytesPerS;
  link.latencyS = nic.latencyS + (pattern == TrafficPattern::kRing ? worstLatency : meanLatency);
  return link;
}

}  // namespace dtlab::core::sim
