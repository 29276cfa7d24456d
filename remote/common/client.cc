#include "remote/common/client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "remote/common/auth.h"
#include "remote/common/protocol.h"
#include "remote/common/tls_credentials.h"

namespace dtlab::remote {

std::shared_ptr<grpc::Channel> makeNodeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxClientReceiveBytes);
  args.SetMaxSendMessageSize(kMaxRequestBytes);
  return grpc::CreateCustomChannel(address, channelCredentials(clientTls()), args);
}

void prepareClientContext(grpc::ClientContext& context, const std::string& token,
                          std::chrono::milliseconds timeout) {
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!token.empty()) context.AddMetadata(kAuthorizationKey, std::string(kBearerPrefix) + token);
}

}  // namespace dtlab::remote
