#include "process_supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::apps {
namespace {

constexpr int kRoutedSignals[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2};

// Signals reach the event loop through a pipe: writing to one is async-signal-safe, and
// a handler may do nothing else. One supervisor at a time owns this.
int g_signal_write_end = -1;
void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_write_end, &c, 1);
}

// A pipe whose open ends close when it goes out of scope, also when a later step fails
// (a second pipe() that fails does not leak the first).
class Pipe {
 public:
  Pipe() { DDPSCOPE_CHECK(::pipe(fd_) == 0, "launcher: cannot create a pipe: ", std::strerror(errno)); }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fd_[0]; }
  int write_end() const { return fd_[1]; }
  void close_read() { close_end(0); }
  void close_write() { close_end(1); }

 private:
  void close_end(int i) {
    if (fd_[i] >= 0) ::close(fd_[i]);
    fd_[i] = -1;
  }
  int fd_[2] = {-1, -1};
};

// Splits complete lines off `buffer` once `data` is appended.
void feed_lines(std::string& buffer, const char* data, size_t n,
                const std::function<void(const std::string&)>& on_line) {
  buffer.append(data, n);
  size_t pos;
  while ((pos = buffer.find('\n')) != std::string::npos) {
    const std::string line = buffer.substr(0, pos);
    buffer.erase(0, pos + 1);
    if (on_line) on_line(line);
  }
}

}  // namespace

// The command's stdout and stderr, and the pipe our signals arrive on; while the last is
// routed, the handlers write into it, and after, they act as by default again.
class ProcessSupervisor::Pipes {
 public:
  Pipe out, err, signals;
  ~Pipes() { unroute_signals(); }
  void route_signals() {  // start() checked that no other supervisor routes them
    g_signal_write_end = signals.write_end();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    for (int sig : kRoutedSignals)
      sigaction(sig, &sa, nullptr);
    routed_ = true;
  }
  void unroute_signals() {
    if (!routed_) return;
    for (int sig : kRoutedSignals)
      signal(sig, SIG_DFL);
    g_signal_write_end = -1;
    routed_ = false;
  }

 private:
  bool routed_ = false;
};

ProcessSupervisor::ProcessSupervisor(std::vector<std::string> argv) : argv_(std::move(argv)) {
  DDPSCOPE_CHECK(!argv_.empty(), "launcher: no command to run");
}

ProcessSupervisor::~ProcessSupervisor() { end_group(); }

void ProcessSupervisor::start() {
  DDPSCOPE_CHECK(child_ < 0, "launcher: the command was started already");
  DDPSCOPE_CHECK(g_signal_write_end < 0, "launcher: another supervised job already receives this process's signals");
  auto pipes = std::make_unique<Pipes>();
  std::vector<char*> argv;
  for (const auto& a : argv_)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t child = fork();
  DDPSCOPE_CHECK(child >= 0, "launcher: fork failed: ", std::strerror(errno));
  if (child == 0) {
    // Own process group: a terminal's Ctrl-C reaches mpirun only through us, once.
    setpgid(0, 0);
    // If the launcher dies (killed, crashed), mpirun is told to end the ranks: they must
    // not run on as orphans. The parent may already be gone: then end at once.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(pipes->out.write_end(), STDOUT_FILENO);
    dup2(pipes->err.write_end(), STDERR_FILENO);
    for (const Pipe* p : {&pipes->out, &pipes->err, &pipes->signals}) {
      close(p->read_end());
      close(p->write_end());
    }
    execv(argv[0], argv.data());
    // Not the logger: between fork() and exec() only the plainest calls are safe.
    std::fprintf(stderr, "launcher: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(child, child);  // also here: whichever of the two runs first
  child_ = child;
  survey_.emplace(child);
  started_at_ = Clock::now();
  pipes->out.close_write();
  pipes->err.close_write();
  pipes->route_signals();
  pipes_ = std::move(pipes);
}

void ProcessSupervisor::stop(std::chrono::milliseconds grace) {
  if (child_ < 0) return;
  const auto deadline = Clock::now() + grace;
  if (!stopping_) {
    kill(child_, SIGTERM);  // mpirun forwards it to the ranks
    kill_at_ = deadline;
  } else if (deadline < kill_at_) {
    kill_at_ = deadline;
  }
  stopping_ = true;
}

void ProcessSupervisor::read_ready(int fd, std::string& buffer, const std::function<void(const std::string&)>& on_line,
                                   bool& open) {
  char buf[8192];
  const ssize_t n = read(fd, buf, sizeof(buf));
  if (n > 0)
    feed_lines(buffer, buf, static_cast<size_t>(n), on_line);
  else if (n == 0 || errno != EINTR)
    open = false;
}

void ProcessSupervisor::drain(int fd, std::string& buffer, const std::function<void(const std::string&)>& on_line) {
  char buf[8192];
  pollfd p{fd, POLLIN, 0};
  ssize_t n;
  while (poll(&p, 1, 100) > 0 && (n = read(fd, buf, sizeof(buf))) > 0)
    feed_lines(buffer, buf, static_cast<size_t>(n), on_line);
}

int ProcessSupervisor::run(const Events& events, std::chrono::milliseconds tick_every) {
  DDPSCOPE_CHECK(pipes_, "launcher: run() before start()");
  std::string out_buffer, err_buffer;
  bool out_open = true, err_open = true;
  int status = 0;
  for (;;) {
    pollfd fds[3] = {{out_open ? pipes_->out.read_end() : -1, POLLIN, 0},
                     {err_open ? pipes_->err.read_end() : -1, POLLIN, 0},
                     {pipes_->signals.read_end(), POLLIN, 0}};
    poll(fds, 3, static_cast<int>(tick_every.count()));
    if (fds[0].revents) read_ready(pipes_->out.read_end(), out_buffer, events.stdout_line, out_open);
    if (fds[1].revents) read_ready(pipes_->err.read_end(), err_buffer, events.stderr_line, err_open);
    char sig = 0;
    if (fds[2].revents && read(pipes_->signals.read_end(), &sig, 1) == 1 && events.signal) events.signal(sig);
    const auto now = Clock::now();
    if (events.tick) events.tick(now);
    if (now >= next_survey_) survey();
    if (stopping_ && now >= kill_at_) kill_tree();
    if (!out_open && !err_open) {
      waitpid(child_, &status, 0);
      reaped_ = true;
      break;
    }
    if (waitpid(child_, &status, WNOHANG) == child_) {
      reaped_ = true;
      // Only what is there now: a process mpirun started on a host it lost may hold the
      // pipes open for as long as that host is cut off.
      drain(pipes_->out.read_end(), out_buffer, events.stdout_line);
      drain(pipes_->err.read_end(), err_buffer, events.stderr_line);
      break;
    }
  }
  end_group();
  return status;
}

void ProcessSupervisor::survey() {
  if (child_ < 0 || reaped_) return;
  for (const ProcessId& p : survey_->look())
    tree_.insert(p);
  // Every 20 ms while the job starts, when launchers spawn ranks in groups of their own
  // and may exit at once (a process orphaned between two surveys escapes the tree: seen
  // under load with 0.5 s surveys and a command that exits 0.8 s in); every 0.5 s after.
  // Not at every tick: the ranks' lines wake the loop hundreds of times a second, and
  // reading /proc's directory at each took 8 % of a core (perf, 2-rank job).
  const auto now = Clock::now();
  next_survey_ = now + (now - started_at_ < std::chrono::seconds(3) ? std::chrono::milliseconds(20)
                                                                    : std::chrono::milliseconds(500));
}

void ProcessSupervisor::kill_tree() {
  survey();
  kill(-child_, SIGKILL);  // mpirun's own group (it outlives mpirun while members remain)
  kill_if_same(std::vector<ProcessId>(tree_.begin(), tree_.end()));
}

void ProcessSupervisor::end_group() {
  // Ranks may outlive mpirun if it was killed or died; make sure none is left behind.
  if (child_ > 0 && !ended_) {
    kill_tree();
    int status = 0;
    if (!reaped_) waitpid(child_, &status, 0);  // never leave a zombie behind
    ended_ = true;
  }
  pipes_.reset();  // closes every descriptor; signals act as by default again
}

int ProcessSupervisor::exit_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ddpscope::apps
