#pragma once

#include <string>
#include <string_view>

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

namespace dtlab::remote {

// Token authentication. A node started with --token accepts a call only when it carries the
// metadata "authorization: Bearer <token>" (the same header HTTP uses, so proxies and gRPC
// tooling recognise it). Without TLS the token travels in clear text: it keeps strangers
// and misdirected clients out, it does not protect against someone who can read the
// traffic.
inline constexpr const char* kAuthorizationKey = "authorization";
inline constexpr std::string_view kBearerPrefix = "Bearer ";

// OK when expectedToken is empty (authentication off) or the call carries it.
// UNAUTHENTICATED otherwise, with a message that says what is missing without echoing
// either token.
grpc::Status checkBearerToken(const grpc::ServerContextBase& context,
                              const std::string& expectedToken);

// Compares without an early exit, so the time taken does not reveal how many leading
// characters of a guess were right.
bool constantTimeEquals(std::string_view a, std::string_view b);

// "host" and "port" of "host:port", "[v6]:port" or "v6-literal:port" (the last colon splits).
struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};
// Throws dtlab::Error naming `what` when the text is not host:port with a port in 0..65535.
HostPort parseHostPort(std::string_view text, std::string_view what);

// 127.0.0.0/8, ::1 and "localhost". A node that listens anywhere else needs a token.
bool isLoopbackHost(std::string_view host);

}  // namespace dtlab::remote
