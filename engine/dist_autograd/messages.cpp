#include "messages.h"

#include <string_view>

namespace ddpscope::dist_autograd {
namespace {

// A message's parts read by position, each checked for its type; errors name the message.
class Parts {
 public:
  Parts(const rpc::ValueList& parts, const char* message, size_t expected) : parts_(parts), message_(message) {
    DDPSCOPE_CHECK(parts.size() == expected, "distributed autograd: ", a_message(), " has ", parts.size(),
                   " parts, not ", expected);
  }
  int64_t integer(size_t i, const char* name) const {
    DDPSCOPE_CHECK(at(i).is_int(), bad(i, name, "an integer"));
    return at(i).to_int();
  }
  bool boolean(size_t i, const char* name) const {
    DDPSCOPE_CHECK(at(i).is_bool(), bad(i, name, "a boolean"));
    return at(i).to_bool();
  }
  const rpc::ValueList& list(size_t i, const char* name) const {
    DDPSCOPE_CHECK(at(i).is_list(), bad(i, name, "a list"));
    return at(i).list();
  }

 private:
  const rpc::Value& at(size_t i) const { return parts_[i]; }
  std::string a_message() const {
    const bool vowel = std::string_view("aeiou").find(message_[0]) != std::string_view::npos;
    return detail::concat(vowel ? "an " : "a ", message_, " message");
  }
  std::string bad(size_t i, const char* name, const char* want) const {
    return detail::concat("distributed autograd: part ", i, " (", name, ") of ", a_message(), " is not ", want);
  }
  const rpc::ValueList& parts_;
  const char* message_;
};

}  // namespace

rpc::ValueList GradientsMessage::encode() && {
  rpc::ValueList values;
  values.reserve(grads.size());
  for (auto& g : grads) {
    if (g.defined()) {
      values.emplace_back(std::move(g));
    } else {
      values.emplace_back();
    }
  }
  rpc::ValueList m;
  m.reserve(5);
  m.emplace_back(ctx_id);
  m.emplace_back(send_id);
  m.emplace_back(pass);
  m.emplace_back(retain_graph);
  m.emplace_back(std::move(values));
  return m;
}

GradientsMessage GradientsMessage::decode(const rpc::ValueList& parts) {
  const Parts p(parts, "gradients", 5);
  GradientsMessage m;
  m.ctx_id = p.integer(0, "context id");
  m.send_id = p.integer(1, "send function");
  m.pass = p.integer(2, "pass");
  m.retain_graph = p.boolean(3, "retain_graph");
  for (const auto& g : p.list(4, "gradients")) {
    DDPSCOPE_CHECK(g.is_tensor() || g.is_none(),
                   "distributed autograd: a gradient of a gradients message is "
                   "neither a tensor nor none");
    m.grads.push_back(g.is_tensor() ? g.tensor() : Tensor());
  }
  return m;
}

rpc::ValueList ActivateMessage::encode() const {
  rpc::ValueList ids;
  for (int64_t id : send_ids)
    ids.emplace_back(id);
  return {rpc::Value(ctx_id), rpc::Value(pass), rpc::Value(std::move(ids))};
}

ActivateMessage ActivateMessage::decode(const rpc::ValueList& parts) {
  const Parts p(parts, "activate", 3);
  ActivateMessage m;
  m.ctx_id = p.integer(0, "context id");
  m.pass = p.integer(1, "pass");
  for (const auto& id : p.list(2, "send functions")) {
    DDPSCOPE_CHECK(id.is_int(), "distributed autograd: a send function of an activate message is not an integer");
    m.send_ids.push_back(id.to_int());
  }
  return m;
}

rpc::ValueList AbandonMessage::encode() const {
  return {rpc::Value(ctx_id), rpc::Value(pass), rpc::Value(int64_t{sender})};
}

AbandonMessage AbandonMessage::decode(const rpc::ValueList& parts) {
  const Parts p(parts, "abandon", 3);
  return {p.integer(0, "context id"), p.integer(1, "pass"), static_cast<int32_t>(p.integer(2, "sender"))};
}

rpc::ValueList ReleaseMessage::encode() const { return {rpc::Value(ctx_id), rpc::Value(int64_t{sender})}; }

ReleaseMessage ReleaseMessage::decode(const rpc::ValueList& parts) {
  const Parts p(parts, "release", 2);
  return {p.integer(0, "context id"), static_cast<int32_t>(p.integer(1, "sender"))};
}

}  // namespace ddpscope::dist_autograd
