#include "remote/common/certificates.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "core/common/check.h"

namespace dtlab::remote {
namespace {

namespace fs = std::filesystem;

struct FreeKey {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct FreeCert {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, FreeKey>;
using Cert = std::unique_ptr<X509, FreeCert>;

constexpr long kDay = 24 * 3600;

// OpenSSL's last error in words (and the queue cleared).
std::string sslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

Key newKey() {
  Key key(EVP_EC_gen("P-256"));
  if (!key) throw Error("gen-certs: generating a key: " + sslError());
  return key;
}

// "IP:a.b.c.d" for an address, "DNS:name" for a host name; refuses anything else.
std::string subjectAltName(const std::string& host) {
  unsigned char address[16];
  if (inet_pton(AF_INET, host.c_str(), address) == 1 ||
      inet_pton(AF_INET6, host.c_str(), address) == 1)
    return "IP:" + host;
  bool name = !host.empty() && host.size() <= 253 && host.front() != '.' && host.front() != '-';
  for (std::size_t i = 0; name && i < host.size(); ++i) {
    const char c = host[i];
    name = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
           (c == '*' && i == 0 && host.size() > 2 && host[1] == '.');
  }
  if (!name)
    throw Error("gen-certs --hosts: '" + host +
                "' is neither a host name nor an IPv4 or IPv6 address");
  return "DNS:" + host;
}

void addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  if (extension == nullptr)
    throw Error("gen-certs: certificate extension '" + value + "': " + sslError());
  X509_add_ext(cert, extension, -1);
  X509_EXTENSION_free(extension);
}

struct CertSpec {
  std::string commonName;
  long days = 0;
  std::vector<std::pair<int, std::string>> extensions;
};

// A certificate for `key`, signed by (issuer, issuerKey), or self-signed when issuer is null.
Cert makeCertificate(EVP_PKEY* key, const CertSpec& spec, X509* issuer, EVP_PKEY* issuerKey) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  BIGNUM* serial = BN_new();
  BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get()));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);  // tolerate clocks an hour apart
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.days * kDay);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const auto text = [](const std::string& s) {
    return reinterpret_cast<const unsigned char*>(s.c_str());
  };
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, text("DTLab"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, text(spec.commonName), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : spec.extensions)
    addExtension(cert.get(), issuer != nullptr ? issuer : cert.get(), nid, value);
  if (X509_sign(cert.get(), issuerKey, EVP_sha256()) == 0)
    throw Error("gen-certs: signing " + spec.commonName + ": " + sslError());
  return cert;
}

// Written under a temporary name and renamed, so a reader never sees half a file; keys are
// readable by their owner only.
template <typename Write>
void writePem(const fs::path& path, bool secret, Write&& write) {
  const fs::path temporary = path.string() + ".tmp";
  FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) throw Error("gen-certs: cannot write " + temporary.string());
  if (secret) ::fchmod(fileno(file), 0600);
  const bool ok = write(file) == 1;
  if (std::fclose(file) != 0 || !ok) {
    fs::remove(temporary);
    throw Error("gen-certs: writing " + path.string() + " failed");
  }
  fs::rename(temporary, path);
}

void writeKeyPair(const fs::path& dir, const std::string& stem, EVP_PKEY* key, X509* cert) {
  writePem(dir / (stem + ".key"), true, [&](FILE* f) {
    return PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  });
  writePem(dir / (stem + ".pem"), false, [&](FILE* f) { return PEM_write_X509(f, cert); });
}

template <typename T, typename Read>
T readPem(const fs::path& path, Read&& read) {
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw Error("gen-certs: cannot read " + path.string());
  T value(read(file));
  std::fclose(file);
  if (!value)
    throw Error("gen-certs: " + path.string() + " is not a PEM file of its kind: " + sslError());
  return value;
}

}  // namespace

GeneratedCertificates generateCertificates(const std::string& dirText,
                                           const std::vector<std::string>& hosts) {
  if (hosts.empty())
    throw Error(
        "gen-certs: --hosts is required: every host name and address the nodes are "
        "dialled at (a certificate that does not name the address dialled is refused)");
  std::string names;
  for (const std::string& host : hosts) {
    if (!names.empty()) names += ',';
    names += subjectAltName(host);
  }

  const fs::path dir(dirText);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw Error("gen-certs: cannot create " + dir.string() + ": " + error.message());

  GeneratedCertificates out{dir.string(), false, hosts};
  Key caKey;
  Cert ca;
  if (fs::exists(dir / "ca.pem") && fs::exists(dir / "ca.key")) {
    caKey = readPem<Key>(dir / "ca.key",
                         [](FILE* f) { return PEM_read_PrivateKey(f, nullptr, nullptr, nullptr); });
    ca = readPem<Cert>(dir / "ca.pem",
                       [](FILE* f) { return PEM_read_X509(f, nullptr, nullptr, nullptr); });
  } else {
    caKey = newKey();
    ca = makeCertificate(caKey.get(),
                         {"DTLab cluster CA",
                          3650,
                          {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                           {NID_key_usage, "critical,keyCertSign,cRLSign"},
                           {NID_subject_key_identifier, "hash"}}},
                         nullptr, caKey.get());
    writeKeyPair(dir, "ca", caKey.get(), ca.get());
    out.newCa = true;
  }

  const Key nodeKey = newKey();
  const Cert node = makeCertificate(nodeKey.get(),
                                    {"dtlab-node " + hosts.front(),
                                     730,
                                     {{NID_basic_constraints, "critical,CA:FALSE"},
                                      {NID_key_usage, "critical,digitalSignature,keyAgreement"},
                                      {NID_ext_key_usage, "serverAuth,clientAuth"},
                                      {NID_subject_alt_name, names},
                                      {NID_subject_key_identifier, "hash"},
                                      {NID_authority_key_identifier, "keyid:always"}}},
                                    ca.get(), caKey.get());
  writeKeyPair(dir, "node", nodeKey.get(), node.get());

  const Key clientKey = newKey();
  const Cert client = makeCertificate(clientKey.get(),
                                      {"dtlab-client",
                                       730,
                                       {{NID_basic_constraints, "critical,CA:FALSE"},
                                        {NID_key_usage, "critical,digitalSignature,keyAgreement"},
                                        {NID_ext_key_usage, "clientAuth"},
                                        {NID_subject_key_identifier, "hash"},
                                        {NID_authority_key_identifier, "keyid:always"}}},
                                      ca.get(), caKey.get());
  writeKeyPair(dir, "client", clientKey.get(), client.get());
  return out;
}

}  // namespace dtlab::remote
