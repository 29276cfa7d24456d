#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

namespace dtlab::remote {

// A channel to a dtlab-node at "host:port" with DTLab's message limits. Connection happens
// lazily on the first call; a call on an unreachable node fails with UNAVAILABLE (or
// DEADLINE_EXCEEDED when it sets wait_for_ready).
std::shared_ptr<grpc::Channel> makeNodeChannel(const std::string& address);

// Prepares a client call: a deadline `timeout` from now (every DTLab call has one) and the
// bearer token when `token` is non-empty.
void prepareClientContext(grpc::ClientContext& context, const std::string& token,
                          std::chrono::milliseconds timeout);

}  // namespace dtlab::remote
