#pragma once
// The facts of events recorded before events carried them (project schema 8 and older), read
// from their sentences as the DTLab of that time wrote them. Only the upgrade to schema 9 calls
// these, once per project file; everything else reads RunEvent::data.
#include <optional>
#include <string_view>

#include "core/metrics/event_facts.h"

namespace dtlab::core {

// "node0 (127.0.0.1:4000): host vm, DTLab 0.1.0, AMD EPYC, 2 cores, 1 worker threads; cuda:0
// (...)".
std::optional<NodeFacts> legacyNodeFacts(std::string_view detail);
// A hybrid's "strategy_switch" ("sync -> async ...", "async -> sync ...") or "hybrid_phase"
// ("asynchronous (phase 2, ...)", "synchronous (...)").
std::optional<PhaseFacts> legacyPhaseFacts(std::string_view kind, std::string_view detail);
// A "start" event naming "gradient buckets of 64 KiB" and, since 2026-12-05, "; per call shm
// 0.0441 ms at 64 KiB, ...".
std::optional<CollectiveFacts> legacyCollectiveFacts(std::string_view detail);

}  // namespace dtlab::core
