#pragma once

#include <string>
#include <vector>

namespace dtlab::remote {

// What `dtlab-node gen-certs DIR --hosts h1,h2,IP...` writes into DIR (PEM; keys readable by
// their owner only):
//   ca.pem, ca.key          the cluster's CA (kept when DIR already has one, so that a node
//                           added later is signed by the same CA)
//   node.pem, node.key      one certificate for every daemon of the cluster: its subject
//                           alternative names are `hosts` (IP addresses as IP names, the rest
//                           as DNS names), usable to serve and to dial peers
//   client.pem, client.key  the coordinator's (dtlab-cli, the GUI): client use only
// Keys are ECDSA P-256, certificates SHA-256 signed; the CA is valid 10 years, the others 2.
struct GeneratedCertificates {
  std::string dir;
  bool newCa = false;  // false: the CA in DIR was kept
  std::vector<std::string> hosts;
};

// Throws dtlab::Error naming what failed (a host that is neither a name nor an address, a
// directory that cannot be written, an unreadable CA).
GeneratedCertificates generateCertificates(const std::string& dir,
                                           const std::vector<std::string>& hosts);

}  // namespace dtlab::remote
