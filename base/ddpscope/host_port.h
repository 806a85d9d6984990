// "HOST:PORT" as users, endpoints and the classroom write it: one reading for the RPC
// transports, `collect --listen` and the app's Join a class.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

namespace ddpscope {

struct HostPort {
  std::string host;  // without the brackets of "[IPv6]:PORT"
  std::string port;  // empty: none given
};

// "HOST:PORT", "[IPV6]:PORT", "[IPV6]", "HOST", or an IPv6 address alone (more than one
// colon and no brackets). Returns what is wrong with `text` (empty when nothing is).
inline std::string split_host_port(std::string_view text, HostPort& out) {
  out = {};
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return "an IPv6 address needs its closing ']'";
    out.host = std::string(text.substr(1, close - 1));
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return "expected ':PORT' after ']'";
      out.port = std::string(text.substr(close + 2));
      if (out.port.empty()) return "no port after ':'";
    }
  } else if (const size_t colon = text.find(':');
             colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
    out.host = std::string(text.substr(0, colon));
    out.port = std::string(text.substr(colon + 1));
    if (out.port.empty()) return "no port after ':'";
  } else {
    out.host = std::string(text);
  }
  return out.host.empty() ? "it names no host" : "";
}

// The port as a number from `lowest` to `highest`, or -1 when it is not one.
inline int port_number(std::string_view port, int lowest = 1, int highest = 65535) {
  int n = -1;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), n);
  return error == std::errc() && end == port.data() + port.size() && n >= lowest && n <= highest ? n : -1;
}

}  // namespace ddpscope
