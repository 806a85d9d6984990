#include "time_format.h"

#include <cmath>
#include <cstdio>

namespace ddpscope::gui {
namespace {

struct Unit {
  double ns;
  const char* name;
};

Unit unitFor(double magnitude_ns) {
  if (magnitude_ns >= 1e9) return {1e9, "s"};
  if (magnitude_ns >= 1e6) return {1e6, "ms"};
  if (magnitude_ns >= 1e3) return {1e3, "µs"};
  return {1, "ns"};
}

}  // namespace

std::string formatDuration(int64_t ns) {
  const double v = std::abs(static_cast<double>(ns));
  const Unit u = unitFor(v);
  const double x = static_cast<double>(ns) / u.ns;
  const int decimals = u.ns == 1 ? 0 : std::abs(x) >= 100 ? 0 : std::abs(x) >= 10 ? 1 : 2;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, x, u.name);
  return buf;
}

std::string formatRulerTime(double t_ns, double tick_ns, double scale_ns) {
  const Unit u = unitFor(std::max(std::abs(scale_ns), tick_ns));
  const double step = tick_ns / u.ns;
  // Enough decimals that one tick changes the last digit shown.
  const int decimals = step >= 1 ? 0 : std::min(9, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  char buf[48];
  const double x = t_ns / u.ns;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, std::abs(x) < 0.5 * std::pow(10, -decimals) ? 0.0 : x, u.name);
  return buf;
}

}  // namespace ddpscope::gui
