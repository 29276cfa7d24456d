#pragma once

#include <chrono>
#include <string>

namespace dtlab::remote {

// Mutual TLS between DTLab processes. Every end has a certificate chain and its private key
// (PEM) and trusts one CA (PEM) to sign its peers: a daemon accepts only clients whose
// certificate that CA signed, and a client accepts only a daemon whose certificate that CA
// signed and names the host it dialled (DNS or IP subject alternative name). The token
// stays as a second factor. `dtlab-node gen-certs` makes a CA and the certificates.
//
// Certificates are read through gRPC's file watcher: replaced files (renewed certificates,
// a new CA) take effect within kTlsReloadInterval, without a restart.
struct TlsFiles {
  std::string cert;  // --tls-cert: this end's certificate chain
  std::string key;   // --tls-key: its private key
  std::string ca;    // --tls-ca: the CA that signs the peers

  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
  bool operator==(const TlsFiles&) const = default;
};

inline constexpr std::chrono::seconds kTlsReloadInterval{2};

// Checks that all three files are given and readable PEM; throws dtlab::Error naming the
// flag and the file otherwise. Nothing to check when none is given.
void checkTlsFiles(const TlsFiles& files);

// gRPC credentials from these files: remote/common/tls_credentials.h (this header stays free
// of gRPC, so that the GUI can carry TlsFiles).

// The identity a daemon dials its peers' rendezvous and parameter-server services with (its
// own certificate; remote/common/client.h's makeNodeChannel). Empty (the default): plain
// text. Set once at start-up, before any channel. A coordinator passes its own instead
// (CoordinatorOptions::tls).
void setClientTls(const TlsFiles& files);
TlsFiles clientTls();

// A hint for a failed call's message when it looks like a TLS problem, in words a user can
// act on ("" when it does not): a plain-text client meeting a TLS daemon (or the reverse),
// a certificate another CA signed, a certificate that does not name the address dialled.
// `clientTls`: whether the failed call was made with TLS.
std::string tlsHint(const std::string& grpcMessage, const std::string& address, bool clientTls);

}  // namespace dtlab::remote
