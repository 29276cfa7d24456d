#include "remote/node/rendezvous_service.h"

#include <algorithm>

#include "core/common/log.h"
#include "remote/common/auth.h"
#include "remote/common/protocol.h"

namespace dtlab::remote {

namespace {

grpc::ServerUnaryReactor* finishNow(grpc::CallbackServerContext* context,
                                    const grpc::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

RendezvousTable::Clock::time_point waitDeadline(uint64_t timeoutMs) {
  const auto capped = std::min<uint64_t>(timeoutMs, kMaxRendezvousWait.count());
  return RendezvousTable::Clock::now() + std::chrono::milliseconds(capped);
}

grpc::Status checkKey(const std::string& key, const char* field) {
  if (key.empty()) return {grpc::StatusCode::INVALID_ARGUMENT, std::string(field) + ": empty key"};
  return checkFieldSize(field, key.size(), kMaxRendezvousKeyBytes);
}

// A Get or Wait that may have to wait: registered with the table, completed by it exactly
// once (the table guarantees that), deleted by gRPC's OnDone after Finish.
class PendingReactor final : public grpc::ServerUnaryReactor {
 public:
  PendingReactor(RendezvousTable& table, proto::GetResponse* getResponse)
      : table_(table), getResponse_(getResponse), id_(table.newWaiterId()) {}

  void start(std::vector<std::string> keys, RendezvousTable::Clock::time_point deadline) {
    table_.waitFor(id_, std::move(keys), deadline,
                   [this](const grpc::Status& status, const std::string& value) {
                     if (status.ok() && getResponse_ != nullptr) getResponse_->set_value(value);
                     Finish(status);
                   });
  }

  void OnCancel() override { table_.cancel(id_); }
  void OnDone() override { delete this; }

 private:
  RendezvousTable& table_;
  proto::GetResponse* getResponse_;
  const RendezvousTable::WaiterId id_;
};

}  // namespace

RendezvousService::RendezvousService(RendezvousTable& table, std::string token)
    : table_(table), token_(std::move(token)) {}

grpc::ServerUnaryReactor* RendezvousService::Set(grpc::CallbackServerContext* context,
                                                 const proto::SetRequest* request,
                                                 proto::SetResponse* /*response*/) {
  grpc::Status status = checkBearerToken(*context, token_);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = checkKey(request->key(), "key");
  if (status.ok())
    status = checkFieldSize("value", request->value().size(), kMaxRendezvousValueBytes);
  if (status.ok()) status = table_.set(request->key(), request->value());
  if (status.ok()) logAt(LogLevel::kDebug, "rendezvous set '", request->key(), "'");
  return finishNow(context, status);
}

grpc::ServerUnaryReactor* RendezvousService::Get(grpc::CallbackServerContext* context,
                                                 const proto::GetRequest* request,
                                                 proto::GetResponse* response) {
  grpc::Status status = checkBearerToken(*context, token_);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok()) status = checkKey(request->key(), "key");
  if (!status.ok()) return finishNow(context, status);
  auto* reactor = new PendingReactor(table_, response);
  reactor->start({request->key()}, waitDeadline(request->timeout_ms()));
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::Wait(grpc::CallbackServerContext* context,
                                                  const proto::WaitRequest* request,
                                                  proto::WaitResponse* /*response*/) {
  grpc::Status status = checkBearerToken(*context, token_);
  if (status.ok()) status = checkProtocolVersion(request->protocol_version());
  if (status.ok() && static_cast<std::size_t>(request->keys_size()) > kMaxRendezvousWaitKeys)
    status = {grpc::StatusCode::INVALID_ARGUMENT, "keys: " + std::to_string(request->keys_size()) +
                                                      " keys exceeds the limit of " +
                                                      std::to_string(kMaxRendezvousWaitKeys)};
  for (int i = 0; status.ok() && i < request->keys_size(); ++i)
    status = checkKey(request->keys(i), "keys");
  if (!status.ok()) return finishNow(context, status);
  auto* reactor = new PendingReactor(table_, nullptr);
  reactor->start({request->keys().begin(), request->keys().end()},
                 waitDeadline(request->timeout_ms()));
  return reactor;
}

}  // namespace dtlab::remote
