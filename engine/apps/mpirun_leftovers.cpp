#include "mpirun_leftovers.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace ddpscope::apps {
namespace fs = std::filesystem;
namespace {

// The space a file takes (a segment is sparse: its size says 4 MB, its blocks 2).
uintmax_t used_bytes(const fs::path& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 ? static_cast<uintmax_t>(st.st_blocks) * 512 : 0;
}

uintmax_t used_bytes_below(const fs::path& dir) {
  uintmax_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    total += used_bytes(it->path());
  return total;
}

// A real directory (not a link to one) of this user's, as OpenMPI makes them (0700): in a
// shared /tmp anyone may make a directory or a link under any name.
bool owned_directory(const fs::path& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid();
}

// "<family << 16>.0;tcp://..." -> family; -1 when the file says something else.
long long job_family(const fs::path& contact) {
  std::ifstream in(contact);
  std::string first;
  if (!std::getline(in, first, '.') || first.empty() || first.size() > 12) return -1;
  for (char c : first)
    if (c < '0' || c > '9') return -1;
  return std::stoll(first) >> 16;
}

// "vader_segment.<node>.<uid>.<job hex>.<rank>" of `node` and `uid` -> its job id; -1 else.
long long segment_job(const std::string& name, const std::string& node, const std::string& uid) {
  const std::string prefix = "vader_segment." + node + "." + uid + ".";
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = name.substr(prefix.size());  // "<job hex>.<rank>"
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 8 || dot + 1 == rest.size()) return -1;
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    const bool ok = i < dot ? std::isxdigit(static_cast<unsigned char>(c)) : i == dot || (c >= '0' && c <= '9');
    if (!ok) return -1;
  }
  return std::stoll(rest.substr(0, dot), nullptr, 16);
}

// The entries of a directory, none when it cannot be read (the non-throwing increment: a
// range-for's throws on an error midway).
std::vector<fs::path> entries_of(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path());
  return out;
}

// Another session directory under `top` (pid.<n>, not `mpirun`'s) whose process runs and whose
// job family is `family`.
bool family_of_a_running_job(const fs::path& top, long long family, pid_t mpirun) {
  for (const fs::path& other : entries_of(top)) {
    const std::string name = other.filename().string();
    if (name.compare(0, 4, "pid.") != 0 || name == "pid." + std::to_string(mpirun)) continue;
    std::error_code ec;
    if (fs::exists("/proc/" + name.substr(4), ec) && job_family(other / "contact.txt") == family) return true;
  }
  return false;
}

}  // namespace

std::string openmpi_tmpdir_base() {
  for (const char* var : {"OMPI_MCA_orte_tmpdir_base", "TMPDIR", "TEMP", "TMP"})
    if (const char* v = std::getenv(var); v && *v) return v;
  return "/tmp";
}

MpirunLeftovers remove_mpirun_leftovers(pid_t mpirun, const std::string& shm, const std::string& tmpdir) {
  MpirunLeftovers out;
  const std::string uid = std::to_string(getuid());
  const std::string suffix = "." + uid;
  std::error_code ec;
  // ompi.<node>.<uid>: the node as OpenMPI wrote it (short or full), taken from the name.
  for (const fs::path& top : entries_of(tmpdir.empty() ? openmpi_tmpdir_base() : tmpdir)) {
    const std::string name = top.filename().string();
    if (name.compare(0, 5, "ompi.") != 0 || name.size() <= 5 + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const fs::path session = top / ("pid." + std::to_string(mpirun));
    if (!owned_directory(top) || !owned_directory(session)) continue;
    const std::string node = name.substr(5, name.size() - 5 - suffix.size());
    const long long family = job_family(session / "contact.txt");
    if (family < 0) continue;  // not one we can tell apart: leave it
    // A family is 16 bits of a hash of the node and mpirun's pid: where pids go past 65536,
    // a running job may share it, and its segments are not this one's to remove.
    if (!family_of_a_running_job(top, family, mpirun))
      for (const fs::path& seg : entries_of(shm.empty() ? "/dev/shm" : shm)) {
        const long long job = segment_job(seg.filename().string(), node, uid);
        if (job < 0 || (job >> 16) != family) continue;
        const uintmax_t bytes = used_bytes(seg);
        if (fs::remove(seg, ec)) out.removed.push_back(seg.string()), out.bytes += bytes;
      }
    const uintmax_t bytes = used_bytes_below(session);
    if (fs::remove_all(session, ec) > 0 && !ec) out.removed.push_back(session.string()), out.bytes += bytes;
  }
  return out;
}

}  // namespace ddpscope::apps
