// Which local address a job's other hosts reach this host on. The RPC agent listens
// there (and nowhere else), and the launcher tells ranks on other hosts to reach its
// collector there.
#pragma once

#include <string>

namespace ddpscope::rpc {

// The local end of this host's route to `host` (a name or an IPv4 address): a UDP
// socket's connect picks the route and sends nothing. Empty when `host` does not
// resolve or no route leads there.
std::string local_address_towards(const std::string& host);

// The first non-loopback IPv4 address of this host, or empty: the last resort when no
// other host is known.
std::string first_external_ipv4();

}  // namespace ddpscope::rpc
