#include "state_dict.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace ddpscope::nn {
namespace {
constexpr char kMagic[] = "DDPSCOPE-STATE-1\n";
constexpr size_t kMagicLen = sizeof(kMagic) - 1;
}  // namespace

void save_state_dict(const StateDict& state, const std::string& path) {
  nlohmann::json header = nlohmann::json::array();
  uint64_t offset = 0;
  std::vector<Tensor> cpu;
  for (const auto& [name, t] : state) {
    Tensor c = t.to(Device::cpu()).contiguous();
    header.push_back({{"name", name},
                      {"dtype", dtype_name(c.dtype())},
                      {"shape", c.sizes()},
                      {"offset", offset},
                      {"nbytes", c.nbytes()}});
    offset += c.nbytes();
    cpu.push_back(std::move(c));
  }
  const std::string text = header.dump();
  // Write to a temporary file and rename, so a crash never leaves a half-written file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    DDPSCOPE_CHECK(out.good(), "save_state_dict: cannot open '", tmp, "' for writing");
    const uint64_t len = text.size();
    out.write(kMagic, kMagicLen);
    out.write(reinterpret_cast<const char*>(&len), sizeof(len));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const Tensor& c : cpu) {
      out.write(static_cast<const char*>(c.raw_data()), static_cast<std::streamsize>(c.nbytes()));
    }
    out.flush();
    DDPSCOPE_CHECK(out.good(), "save_state_dict: writing '", tmp, "' failed (disk full?)");
  }
  DDPSCOPE_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "save_state_dict: cannot rename '", tmp, "' to '", path,
                 "': ", std::strerror(errno));
}

StateDict load_state_dict_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DDPSCOPE_CHECK(in.good(), "load_state_dict: cannot open '", path, "'");
  char magic[kMagicLen];
  in.read(magic, kMagicLen);
  DDPSCOPE_CHECK(in.good() && std::memcmp(magic, kMagic, kMagicLen) == 0, "load_state_dict: '", path,
                 "' is not a ddpscope state file (bad magic)");
  uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), sizeof(len));
  DDPSCOPE_CHECK(in.good() && len < (1u << 30), "load_state_dict: '", path, "' has a corrupt header length");
  std::string text(len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(len));
  DDPSCOPE_CHECK(in.good(), "load_state_dict: '", path, "' is truncated in its header");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DDPSCOPE_ERROR("load_state_dict: '", path, "' has a corrupt header: ", e.what());
  }
  const std::streampos data_start = in.tellg();
  StateDict state;
  for (const auto& entry : header) {
    const std::string name = entry.at("name");
    const Shape shape = entry.at("shape").get<Shape>();
    Tensor t = Tensor::empty(shape, dtype_from_name(entry.at("dtype")));
    const uint64_t nbytes = entry.at("nbytes");
    DDPSCOPE_CHECK(nbytes == t.nbytes(), "load_state_dict: entry '", name, "' in '", path, "' has ", nbytes,
                   " bytes for ", t.describe());
    in.seekg(data_start + static_cast<std::streamoff>(entry.at("offset").get<uint64_t>()));
    in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(nbytes));
    DDPSCOPE_CHECK(in.good(), "load_state_dict: '", path, "' is truncated in entry '", name, "'");
    state.emplace_back(name, std::move(t));
  }
  return state;
}

}  // namespace ddpscope::nn
