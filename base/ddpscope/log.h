// Diagnostics: every ddpscope library and program reports what it noticed through one
// spdlog logger on stderr, so the format and the level are set in one place:
//   [ddpscope] collector: 2 batches, 370 events, 0 rejected
//   [ddpscope] warning: rpc: worker1 could not send ...
// DDPSCOPE_LOG_LEVEL (trace, debug, info, warning, error, off; default info) chooses what
// shows. What a command was asked for (its results, progress, its closing error line)
// is its output, not a diagnostic, and is printed as such. Not for code between fork()
// and exec(): the logger takes a lock that another thread may have held at the fork.
#pragma once

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace ddpscope::log {

namespace detail {

// "%*": the level's name and a colon for what is not plain information ("warning: ").
class LevelUnlessInfo : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    if (msg.level == spdlog::level::info) return;
    const auto name = spdlog::level::to_string_view(msg.level);
    dest.append(name.data(), name.data() + name.size());
    dest.append(std::string_view(": "));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LevelUnlessInfo>(); }
};

inline std::shared_ptr<spdlog::logger> make_logger() {
  auto logger = std::make_shared<spdlog::logger>("ddpscope", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelUnlessInfo>('*').set_pattern("[ddpscope] %*%v");
  logger->set_formatter(std::move(formatter));
  logger->flush_on(spdlog::level::trace);  // a rank may be killed right after it logs
  const char* wanted = std::getenv("DDPSCOPE_LOG_LEVEL");
  if (wanted && *wanted) {
    const std::string name = wanted == std::string("warn") ? "warning" : wanted;
    const auto level = spdlog::level::from_str(name);
    if (level != spdlog::level::off || name == "off") {
      logger->set_level(level);
    } else {
      // A diagnostic setting must not stop a job: say so and keep the default.
      logger->warn("DDPSCOPE_LOG_LEVEL='{}' is not one of trace, debug, info, warning, error, off; using info", wanted);
    }
  }
  return logger;
}

}  // namespace detail

inline spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> instance = detail::make_logger();
  return *instance;
}

template <typename... Args>
void info(spdlog::format_string_t<Args...> format, Args&&... args) {
  logger().info(format, std::forward<Args>(args)...);
}
template <typename... Args>
void warn(spdlog::format_string_t<Args...> format, Args&&... args) {
  logger().warn(format, std::forward<Args>(args)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> format, Args&&... args) {
  logger().error(format, std::forward<Args>(args)...);
}

}  // namespace ddpscope::log
