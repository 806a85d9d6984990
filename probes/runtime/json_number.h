// Numbers in JSON that may not be finite. JSON has no NaN or infinity (nlohmann writes
// them as null), yet a loss that turns NaN is exactly what a user must see. Such values
// travel as the strings "nan", "inf" and "-inf"; readers take numbers, those strings,
// and null (an older writer's NaN).
#pragma once

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace ddpscope::probes {

inline nlohmann::json json_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// `fallback` when the value is missing or of another type.
inline double json_to_double(const nlohmann::json& v, double fallback = 0.0) {
  if (v.is_number()) return v.get<double>();
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return fallback;
}

// object[key] read by json_to_double; `fallback` when the key is missing.
inline double json_field(const nlohmann::json& object, const char* key, double fallback = 0.0) {
  const auto it = object.find(key);
  return it == object.end() ? fallback : json_to_double(*it, fallback);
}

// object[key] as a T; `fallback` when the key is missing or its value of another type (a
// field of the wrong type reads as not said, not as a failure of the whole object).
template <typename T>
T json_value(const nlohmann::json& object, const char* key, T fallback) {
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return fallback;
  }
}

}  // namespace ddpscope::probes
