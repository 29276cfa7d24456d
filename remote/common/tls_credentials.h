#pragma once

#include <memory>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "remote/common/tls.h"

namespace dtlab::remote {

// A server's credentials: mutual TLS (client certificates required and verified) when
// `files` is enabled, plain text otherwise.
std::shared_ptr<grpc::ServerCredentials> serverCredentials(const TlsFiles& files);

// A client's credentials: mutual TLS with `files` (the server's certificate must be signed
// by files.ca and name the host dialled), plain text when they are empty.
std::shared_ptr<grpc::ChannelCredentials> channelCredentials(const TlsFiles& files);

}  // namespace dtlab::remote
