#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <grpcpp/support/status.h>

namespace dtlab::remote {

// The wire protocol version (remote/proto/dtlab.proto). Every request carries it; a node
// refuses any other value with FAILED_PRECONDITION naming both versions. Bump it when a
// change would make an old peer misread a message, not for added optional fields.
// 4: the gpu_mem_bytes node metric; 5: several ranks per node (StartJob slot and node_index);
// 6: RegroupJob (a group that goes on without a lost node); 7: the parameter server's
// Snapshot (checkpoints of its blocks) and shards seeded from a resume checkpoint; 8: StartJob
// links_emulated (every rank then joins an exchange after each collective: an older node
// would leave the group's collectives out of step); 9: checkpoints and records of pushes in
// parts (JobUpdate.blobs, StageCheckpoint), never one message; 10: the parameter server's
// Snapshot in two halves (PsSnapshotRequest.mode: STAGE, then FETCH_STAGED); 11: gang
// reservations (Reserve; a node refuses a job without one while others wait for it); 12: an
// event's facts (Event.data), which the coordinator follows a hybrid's phase by.
inline constexpr uint32_t kProtocolVersion = 12;

// The capability (NodeInfo.capabilities) of a node that applies StartJobRequest.emulation.
inline constexpr std::string_view kJobEmulationCapability = "job_emulation";
// The error details (grpc::Status::error_details) of a rendezvous Get or Wait whose keys were not
// set in time: the server's own answer, which a client tells from its own call's deadline by
// this mark, not by the message.
inline constexpr std::string_view kRendezvousKeysMissing = "dtlab.rendezvous.keys_missing";

// Size limits. gRPC enforces the message cap before our handlers run; the per-field caps
// give a message naming the field instead of a generic RESOURCE_EXHAUSTED.
inline constexpr int kMaxRequestBytes = 4 << 20;         // server max receive message size
inline constexpr int kMaxClientReceiveBytes = 16 << 20;  // what clients accept from a node
// Blobs (checkpoints, records of pushes) of any size travel in parts: at most this many bytes
// of parts in one JobUpdate, and this many in one CheckpointPart (under the request limit).
inline constexpr std::size_t kMaxBlobBytesPerUpdate = 4 << 20;
inline constexpr std::size_t kCheckpointPartBytes = 2 << 20;
inline constexpr std::size_t kMaxSpecJsonBytes = 1 << 20;
inline constexpr std::size_t kMaxJobIdBytes = 128;
inline constexpr std::size_t kMaxNameBytes = 256;
inline constexpr std::size_t kMaxAddressBytes = 256;
inline constexpr std::size_t kMaxRendezvousKeyBytes = 1 << 10;
inline constexpr std::size_t kMaxRendezvousValueBytes = 1 << 20;
inline constexpr std::size_t kMaxRendezvousWaitKeys = 4096;
// Points (steps + evals + events + node samples) in one WatchJob message.
inline constexpr int kMaxPointsPerUpdate = 4096;
inline constexpr int kMaxWorldSize = 4096;

// The longest a rendezvous Get/Wait blocks on the server; clients wanting longer ask again.
inline constexpr std::chrono::milliseconds kMaxRendezvousWait{60000};
inline constexpr std::chrono::milliseconds kDefaultHeartbeat{1000};

// OK when `clientVersion` is ours; FAILED_PRECONDITION naming both versions otherwise.
grpc::Status checkProtocolVersion(uint32_t clientVersion);

// OK when size <= limit; INVALID_ARGUMENT "<field>: N bytes exceeds the limit of M bytes".
grpc::Status checkFieldSize(std::string_view field, std::size_t size, std::size_t limit);

// "DEADLINE_EXCEEDED", "UNAVAILABLE", ...: for messages shown to users.
const char* statusCodeName(grpc::StatusCode code);
// "UNAVAILABLE: failed to connect to all addresses".
std::string describeStatus(const grpc::Status& status);

// A new job or reservation id: `prefix` and 64 random bits in hex ("r1f3a...").
std::string randomId(std::string_view prefix = {});

// "user@host" of this process: how nodes name the owner of its runs.
const std::string& ownerOfThisProcess();
// "experiment/variant" of a spec's variant, from the spec as a job carries it.
std::string runNameOf(const std::string& specJson, int variant);

// How nodes and coordinators name the work that holds a node: "alice@lab's run 'exp/sync'
// (job J)", without what is not known (older peers send no owner or run); "job J" alone.
std::string describeRun(const std::string& owner, const std::string& runName,
                        const std::string& jobId = {});
// The same for a call to the daemon at `address`; a connection that failed the way a TLS
// mismatch fails gets a hint saying which (remote/common/tls.h).
// `tls`: whether the call was made with TLS.
std::string describeStatus(const grpc::Status& status, const std::string& address, bool tls);

}  // namespace dtlab::remote
