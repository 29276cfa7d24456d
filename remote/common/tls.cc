#include "remote/common/tls.h"

#include <fstream>
#include <iterator>
#include <mutex>

#include "core/common/check.h"

namespace dtlab::remote {
namespace {

std::mutex clientMutex;
TlsFiles clientFiles;

// One file of the set: readable, and PEM of the kind expected.
void checkPemFile(const std::string& path, const char* flag, const char* what) {
  if (path.empty())
    throw Error(std::string(flag) +
                " missing: --tls-cert, --tls-key and --tls-ca go together (dtlab-node gen-certs "
                "makes all three)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string(flag) + " " + path + ": cannot read the file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos || text.find(what) == std::string::npos)
    throw Error(std::string(flag) + " " + path + ": not a PEM " + what);
}

bool contains(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

void checkTlsFiles(const TlsFiles& files) {
  if (!files.enabled()) return;
  checkPemFile(files.cert, "--tls-cert", "CERTIFICATE");
  checkPemFile(files.key, "--tls-key", "PRIVATE KEY");
  checkPemFile(files.ca, "--tls-ca", "CERTIFICATE");
}

void setClientTls(const TlsFiles& files) {
  const std::lock_guard lock(clientMutex);
  clientFiles = files;
}

TlsFiles clientTls() {
  const std::lock_guard lock(clientMutex);
  return clientFiles;
}

std::string tlsHint(const std::string& message, const std::string& address, bool tls) {
  const std::string host = address.substr(0, address.rfind(':'));
  if (contains(message, "Hostname Verification") || contains(message, "not in peer certificate") ||
      contains(message, "Peer name"))
    return "the node's certificate does not name " + host +
           ", the address dialled: make it again with that address in --hosts "
           "(dtlab-node gen-certs DIR --hosts ...), or dial a name it lists";
  if (tls && (contains(message, "CERTIFICATE_VERIFY_FAILED") ||
              contains(message, "certificate verify failed")))
    return "the node's certificate is not signed by the CA of --tls-ca (certificates of another "
           "cluster?)";
  if (tls && (contains(message, "WRONG_VERSION_NUMBER") || contains(message, "wrong version")))
    return "the node at " + address +
           " does not speak TLS: start it with --tls-cert, --tls-key "
           "and --tls-ca, or dial it without them";
  // A server that refuses the client's certificate closes the connection mid-handshake.
  if (tls && (contains(message, "andshake") || contains(message, "SSL") ||
              contains(message, "Socket closed") || contains(message, "Connection reset")))
    return "the TLS handshake with " + address +
           " failed: the node refused this client's certificate (signed by another CA?) or its "
           "own is not signed by --tls-ca";
  if (!tls && (contains(message, "Socket closed") || contains(message, "Connection reset") ||
               contains(message, "connection closed") || contains(message, "GOAWAY") ||
               contains(message, "failed to connect")))
    return "if the node was started with --tls-cert, it takes only TLS clients: give "
           "--tls-cert, --tls-key and --tls-ca";
  return "";
}

}  // namespace dtlab::remote
