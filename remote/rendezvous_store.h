#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "remote/proto/dtlab.grpc.pb.h"

namespace dtlab::remote {

struct RendezvousStoreOptions {
  std::string address;  // host:port of the dtlab-node hosting the Rendezvous service
  std::string token;    // that node's --token, if any
  // Every key becomes "<keyPrefix>/<key>", so jobs sharing a daemon do not see each other's
  // keys. The job id; must not be empty.
  std::string keyPrefix;
  // How long get() and wait() (without an explicit timeout) wait for keys to appear.
  std::chrono::milliseconds timeout{30000};
  // Deadline of one Set call, and the slack added to a Get/Wait's deadline so the server's
  // DEADLINE_EXCEEDED (which names the missing key) arrives before the client's own.
  std::chrono::milliseconds rpcTimeout{10000};
  // When set, waits poll it (every kCancelPoll) and throw once it is true, so a job
  // cancelled while its peers are still missing stops promptly.
  const std::atomic<bool>* cancel = nullptr;
};

// A Gloo rendezvous store over a node's Rendezvous service (remote/proto/dtlab.proto), so
// the ranks of a job on different machines can build their Gloo context without a shared
// file system or Redis. Used from one thread at a time (Gloo's context setup).
//
// Every call has a deadline and checks the status; failures throw dtlab::Error saying which
// key, which service and what to check (a missing key names the rank that did not arrive).
// Waits longer than the service's 60 s cap are split into several calls.
class RendezvousStore final : public gloo::rendezvous::Store {
 public:
  static constexpr std::chrono::milliseconds kCancelPoll{250};

  explicit RendezvousStore(RendezvousStoreOptions options);
  // Over an existing channel to options.address (null: a new one).
  RendezvousStore(std::shared_ptr<grpc::Channel> channel, RendezvousStoreOptions options);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to options.timeout for the key.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  // Gloo's stores read a zero timeout as "no timeout"; here it means options.timeout, so
  // no wait is unbounded.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  const RendezvousStoreOptions& options() const { return options_; }

 private:
  std::string fullKey(const std::string& key) const;
  // Get (when getValue) or Wait on fullKeys, repeated until `timeout` has passed.
  void waitOrGet(const std::vector<std::string>& fullKeys, std::chrono::milliseconds timeout,
                 std::string* getValue);

  RendezvousStoreOptions options_;
  std::unique_ptr<proto::Rendezvous::Stub> stub_;
};

}  // namespace dtlab::remote
