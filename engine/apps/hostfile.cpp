#include "hostfile.h"

#include <fstream>
#include <sstream>

#include "ddpscope/error.h"
#include "ddpscope/regular_file.h"

namespace ddpscope::apps {
namespace {

bool valid_host(const std::string& h) {
  // Never a leading '-': mpirun and ssh would take "-V" or "-Fcfg" as their options.
  if (h.empty() || h.size() > 253 || h[0] == '-') return false;
  for (unsigned char c : h) {
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']')) return false;
  }
  return true;
}

// A positive whole number, or -1.
int positive(const std::string& text) {
  if (text.empty() || text.size() > 7) return -1;
  for (char c : text)
    if (c < '0' || c > '9') return -1;
  const int v = std::stoi(text);
  return v >= 1 ? v : -1;
}

}  // namespace

int Hostfile::total_slots() const {
  int total = 0;
  for (const auto& h : hosts) {
    if (h.slots < 0) return -1;
    total += h.slots;
  }
  return total;
}

Hostfile read_hostfile(const std::string& path) {
  check_regular_file(path, "hostfile", 16 << 20);  // a pipe would block the launch
  std::ifstream in(path, std::ios::binary);
  DDPSCOPE_CHECK(in.good(), "--hostfile: cannot read '", path, "'");
  Hostfile file;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto where = [&] { return detail::concat("--hostfile '", path, "' line ", number, ": "); };
    DDPSCOPE_CHECK(number <= 100000 && line.size() <= 4096, where(), "too long for a hostfile");
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string host, word;
    if (!(words >> host)) continue;  // blank or a comment
    DDPSCOPE_CHECK(valid_host(host), where(), "'", host.substr(0, 40),
                   "' is not a host name or address (letters, digits, '.', '-', '_', ':' and brackets for IPv6, "
                   "never a leading '-'); each line is HOST [slots=N] [max_slots=N]");
    HostfileEntry entry{host, -1};
    while (words >> word) {
      const size_t eq = word.find('=');
      const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
      DDPSCOPE_CHECK(key == "slots" || key == "max_slots" || key == "max-slots", where(), "unknown setting '",
                     word.substr(0, 40), "'; each line is HOST [slots=N] [max_slots=N]");
      const int n = positive(value);
      DDPSCOPE_CHECK(n > 0, where(), key, " must be a whole number of at least 1, got '", value.substr(0, 40), "'");
      if (key == "slots") entry.slots = n;
    }
    file.hosts.push_back(entry);
  }
  DDPSCOPE_CHECK(!file.hosts.empty(), "--hostfile '", path,
                 "' names no host; write one line per host: HOST [slots=N] (e.g. node1 slots=4)");
  return file;
}

}  // namespace ddpscope::apps
