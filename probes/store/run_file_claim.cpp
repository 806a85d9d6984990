#include "run_file_claim.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "run_store_reader.h"
#include "run_workspace.h"
#include "sqlite_db.h"

namespace ddpscope::probes {
namespace {

[[noreturn]] void refuse(const std::string& message) { throw RunStoreError(message, __FILE__, __LINE__); }

// What the run in `path` is, for the message that refuses to replace it; empty when it
// is not a run file this build can read.
std::string describe_existing_run(const std::string& path) {
  try {
    RunStoreReader reader(path);
    const RunRow run = reader.run();
    std::ostringstream os;
    os << "a " << (run.status.empty() ? "recorded" : run.status) << " run (" << run.model << ", " << run.world_size
       << (run.world_size == 1 ? " rank" : " ranks") << ", started " << run.created_at << ")";
    return os.str();
  } catch (const std::exception&) {
    return {};
  }
}

bool starts_like_sqlite(int fd) {
  char head[16] = {};
  const ssize_t n = pread(fd, head, sizeof head, 0);
  return n == static_cast<ssize_t>(sizeof head) && std::memcmp(head, "SQLite format 3", 16) == 0;
}

}  // namespace

std::string command_line_of(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : raw)
    if (c == '\0') c = ' ';
  while (!raw.empty() && raw.back() == ' ')
    raw.pop_back();
  constexpr size_t kMax = 160;
  if (raw.size() > kMax) raw = raw.substr(0, kMax) + "...";
  return raw;
}

long lock_holder_pid(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  // /proc/locks: "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (major:minor:inode, hex
  // device numbers).
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string id, type, mode, access, dev_inode;
    long pid = 0;
    if (!(in >> id >> type)) continue;
    if (type == "->") in >> type;  // a waiter's line
    if (!(in >> mode >> access >> pid >> dev_inode) || type != "FLOCK") continue;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    if (std::sscanf(dev_inode.c_str(), "%x:%x:%llu", &major, &minor, &inode) != 3) continue;
    if (inode != st.st_ino || major != ::major(st.st_dev) || minor != ::minor(st.st_dev)) continue;
    return pid;
  }
  return 0;
}

std::string describe_lock_holder(const std::string& path) {
  const long pid = lock_holder_pid(path);
  if (pid <= 0) return {};
  const std::string cmd = command_line_of(pid);
  return "pid " + std::to_string(pid) + (cmd.empty() ? "" : ": " + cmd);
}

void ask_run_holder_for_stacks(const std::string& path) {
  const long pid = lock_holder_pid(path);
  if (pid <= 0)
    refuse(detail::concat("no job on this host records '", path,
                          "' (its launcher holds the file while it runs): ask on the host where `ddpscope-cli` "
                          "launched the job"));
  const std::string command = command_line_of(pid);
  if (command.find("ddpscope-cli") == std::string::npos)
    refuse(detail::concat("'", path, "' is held by pid ", pid, " (", command,
                          "), not by a ddpscope-cli launcher: its ranks cannot be asked"));
  if (::kill(static_cast<pid_t>(pid), SIGUSR2) != 0)
    refuse(detail::concat("could not signal the launcher (pid ", pid, ") of '", path, "'"));
}

RunFileClaim::RunFileClaim(const std::string& path, bool replace) : path_(path) {
  bool created = false;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    created = true;
  } else if (errno == EEXIST) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd_ < 0) {
    refuse(detail::concat("cannot open run file '", path, "' for writing: ", std::strerror(errno),
                          "; choose a path in a folder you can write to"));
  }
  const auto give_up = [&](const std::string& message) {
    ::close(fd_);
    fd_ = -1;
    if (created) unlink(path.c_str());
    refuse(message);
  };
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = describe_lock_holder(path);
    give_up(detail::concat("run file '", path, "' is being written by another job",
                           holder.empty() ? "" : " (" + holder + ")",
                           "; wait for it to end, stop it, or choose another --out"));
  }
  struct stat st {};
  fstat(fd_, &st);
  if (created || st.st_size == 0) return;
  if (!starts_like_sqlite(fd_)) {
    give_up(detail::concat("'", path,
                           "' exists and is not a ddpscope run file; it is left untouched. "
                           "Choose another --out"));
  }
  const std::string existing = describe_existing_run(path);
  if (existing.empty()) {
    give_up(detail::concat("'", path,
                           "' exists and is not a ddpscope run file this build can read; it is "
                           "left untouched. Choose another --out"));
  }
  if (!replace) {
    give_up(detail::concat("run file '", path, "' already holds ", existing,
                           "; add --force to replace it, or choose another --out"));
  }
  // Replace: empty the file in place (the claim is on this inode) and drop the old
  // run's write-ahead log and shared-memory index, so nothing of it survives.
  if (ftruncate(fd_, 0) != 0) {
    give_up(detail::concat("cannot empty run file '", path, "' to replace it: ", std::strerror(errno)));
  }
  unlink((path + "-wal").c_str());
  unlink((path + "-shm").c_str());
}

std::unique_ptr<RunFileClaim> claim_run_file(const std::string& out, bool replace) {
  if (!out.empty()) return std::make_unique<RunFileClaim>(out, replace);
  for (int attempt = 0;; ++attempt) {
    try {
      return std::make_unique<RunFileClaim>(new_run_path(), false);
    } catch (const RunStoreError&) {
      if (attempt == 20) throw;
    }
  }
}

RunFileClaim::~RunFileClaim() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace ddpscope::probes
