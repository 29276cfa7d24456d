#include "remote/rendezvous_store.h"

#include <algorithm>

#include "core/common/check.h"
#include "remote/common/client.h"
#include "remote/common/protocol.h"
#include "remote/common/tls.h"

namespace dtlab::remote {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

RendezvousStore::RendezvousStore(RendezvousStoreOptions options)
    : RendezvousStore(nullptr, std::move(options)) {}

RendezvousStore::RendezvousStore(std::shared_ptr<grpc::Channel> channel,
                                 RendezvousStoreOptions options)
    : options_(std::move(options)) {
  DTLAB_ENFORCE(!options_.keyPrefix.empty(), "a rendezvous store needs a key prefix");
  if (!channel) channel = makeNodeChannel(options_.address);
  stub_ = proto::Rendezvous::NewStub(channel);
  DTLAB_ENFORCE(options_.rpcTimeout.count() > 0, "rpcTimeout must be positive");
}

std::string RendezvousStore::fullKey(const std::string& key) const {
  return options_.keyPrefix + "/" + key;
}

void RendezvousStore::set(const std::string& key, const std::vector<char>& data) {
  proto::SetRequest request;
  request.set_protocol_version(kProtocolVersion);
  request.set_key(fullKey(key));
  request.set_value(std::string(data.begin(), data.end()));
  proto::SetResponse response;
  grpc::ClientContext context;
  prepareClientContext(context, options_.token, options_.rpcTimeout);
  // The rendezvous daemon may still be starting when the first rank gets here.
  context.set_wait_for_ready(true);
  const grpc::Status status = stub_->Set(&context, request, &response);
  if (status.error_code() != grpc::StatusCode::OK)
    throw Error("rendezvous at " + options_.address + ": setting key '" + request.key() +
                "' failed: " + describeStatus(status));
}

std::vector<char> RendezvousStore::get(const std::string& key) {
  std::string value;
  waitOrGet({fullKey(key)}, options_.timeout, &value);
  return {value.begin(), value.end()};
}

void RendezvousStore::wait(const std::vector<std::string>& keys) {
  wait(keys, options_.timeout);
}

void RendezvousStore::wait(const std::vector<std::string>& keys,
                           const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& key : keys) full.push_back(fullKey(key));
  waitOrGet(full, timeout.count() == 0 ? options_.timeout : timeout, nullptr);
}

void RendezvousStore::waitOrGet(const std::vector<std::string>& fullKeys,
                                std::chrono::milliseconds timeout, std::string* getValue) {
  const auto end = Clock::now() + std::max(timeout, std::chrono::milliseconds(0));
  const char* what = getValue != nullptr ? "getting" : "waiting for";
  const std::string keyText = fullKeys.size() == 1 ? "key '" + fullKeys[0] + "'"
                                                   : std::to_string(fullKeys.size()) + " keys";
  const auto longestWait = options_.cancel != nullptr ? kCancelPoll : kMaxRendezvousWait;
  while (true) {
    if (options_.cancel != nullptr && options_.cancel->load())
      throw Error("rendezvous at " + options_.address + ": cancelled while " + what + " " +
                  keyText);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
    const auto serverWait = std::clamp(left, std::chrono::milliseconds(0), longestWait);
    grpc::ClientContext context;
    prepareClientContext(context, options_.token, serverWait + options_.rpcTimeout);
    context.set_wait_for_ready(true);
    grpc::Status status;
    if (getValue != nullptr) {
      proto::GetRequest request;
      request.set_protocol_version(kProtocolVersion);
      request.set_key(fullKeys.at(0));
      request.set_timeout_ms(static_cast<uint64_t>(serverWait.count()));
      proto::GetResponse response;
      status = stub_->Get(&context, request, &response);
      if (status.error_code() == grpc::StatusCode::OK) {
        *getValue = std::move(*response.mutable_value());
        return;
      }
    } else {
      proto::WaitRequest request;
      request.set_protocol_version(kProtocolVersion);
      for (const auto& key : fullKeys) request.add_keys(key);
      request.set_timeout_ms(static_cast<uint64_t>(serverWait.count()));
      proto::WaitResponse response;
      status = stub_->Wait(&context, request, &response);
      if (status.error_code() == grpc::StatusCode::OK) return;
    }
    // The server's DEADLINE_EXCEEDED names the missing keys; ask again while time is left
    // (the service caps one wait at 60 s, and a cancellable wait polls).
    const bool serverTimedOut = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
                                status.error_details() == kRendezvousKeysMissing;
    if (serverTimedOut && Clock::now() < end) continue;
    if (serverTimedOut)
      throw Error("rendezvous at " + options_.address + ": " + status.error_message() +
                  " (waited " + std::to_string(timeout.count()) + " ms)");
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      throw Error(
          "rendezvous at " + options_.address + ": no answer while " + what + " " + keyText +
          " (is the node at that address running and reachable?): " + describeStatus(status));
    throw Error("rendezvous at " + options_.address + ": " + what + " " + keyText +
                " failed: " + describeStatus(status, options_.address, clientTls().enabled()));
  }
}

}  // namespace dtlab::remote
