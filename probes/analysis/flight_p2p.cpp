#include "flight_p2p.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ddpscope/error.h"
#include "flight_words.h"

namespace ddpscope::probes {

using namespace flight_words;

namespace {

using P2pRows = std::vector<const CollectiveRow*>;
using Channel = std::pair<int, int>;  // (src, dst), global ranks

// The ranks that recorded anything of group `name`.
std::set<int> ranks_recording(const std::string& name, const FlightData& data) {
  std::set<int> recorded;
  for (const auto& [rank, rows] : data.by_rank)
    for (const CollectiveRow& r : rows)
      if (r.pg_name == name) recorded.insert(rank);
  return recorded;
}

// The group's members as its description gives them, else as the records imply.
std::vector<int> group_members(const std::string& name, const FlightData& data, const std::set<int>& recorded) {
  std::vector<int> members;
  for (const GroupRow& g : data.groups)
    if (g.name == name && members.empty()) members = g.ranks;
  if (members.empty()) {
    // No description (gloo's dumps have none): the default group numbers ranks as the
    // world does; another group, by the ranks that recorded it.
    if (name == "0") {
      for (int r = 0; r < data.world_size; ++r)
        members.push_back(r);
    } else {
      members.assign(recorded.begin(), recorded.end());
    }
  }
  return members;
}

// Each direction's sends (as the sender recorded them) and receives (as the receiver
// did), in record order; `wrapped`: the ranks whose rings dropped older records.
struct P2pChannels {
  std::map<Channel, P2pRows> sends, recvs;
  std::set<int> wrapped;
};

P2pChannels collect_channels(const std::string& name, const FlightData& data, const std::vector<int>& members) {
  std::vector<int> order = members;
  std::sort(order.begin(), order.end());  // PyTorch maps a group rank k to sorted(members)[k]
  const auto global = [&](int local) {
    return local >= 0 && local < static_cast<int>(order.size()) ? order[local] : -1;
  };
  P2pChannels out;
  for (const auto& [rank, rows] : data.by_rank) {
    int64_t first_record = -1;
    for (const CollectiveRow& r : rows)
      if (first_record < 0 || r.record_id < first_record) first_record = r.record_id;
    if (first_record > 0) out.wrapped.insert(rank);
    P2pRows mine;
    for (const CollectiveRow& r : rows)
      if (r.pg_name == name && r.is_p2p() && r.p2p_src >= 0 && r.p2p_dst >= 0) mine.push_back(&r);
    std::sort(mine.begin(), mine.end(), [](const CollectiveRow* a, const CollectiveRow* b) {
      return std::tie(a->record_id, a->p2p_seq) < std::tie(b->record_id, b->p2p_seq);
    });
    for (const CollectiveRow* r : mine) {
      const int src = global(r->p2p_src), dst = global(r->p2p_dst);
      if (src < 0 || dst < 0) continue;
      if (r->op == "send" && src == rank) out.sends[{src, dst}].push_back(r);
      if (r->op == "recv" && dst == rank) out.recvs[{src, dst}].push_back(r);
    }
  }
  return out;
}

// One direction's sends paired with its receives, and the ends left without a partner.
struct Pairing {
  std::vector<std::pair<const CollectiveRow*, const CollectiveRow*>> matched;
  P2pRows lone_sends, lone_recvs;
};

// In order; or, when a ring dropped older records, by p2p number, counting as lone only
// the ends the other side's records reach back to.
Pairing pair_ends(const P2pRows& s, const P2pRows& r, bool by_number) {
  Pairing p;
  if (!by_number) {
    for (size_t k = 0; k < std::max(s.size(), r.size()); ++k) {
      if (k < s.size() && k < r.size())
        p.matched.push_back({s[k], r[k]});
      else if (k < s.size())
        p.lone_sends.push_back(s[k]);
      else
        p.lone_recvs.push_back(r[k]);
    }
    return p;
  }
  std::map<int64_t, const CollectiveRow*> rn;
  for (const CollectiveRow* x : r)
    rn[x->p2p_seq] = x;
  const int64_t r_lo = r.empty() ? 0 : r.front()->p2p_seq, s_lo = s.empty() ? 0 : s.front()->p2p_seq;
  for (const CollectiveRow* x : s) {
    if (const auto it = rn.find(x->p2p_seq); it != rn.end()) {
      p.matched.push_back({x, it->second});
      rn.erase(it);
    } else if (x->p2p_seq >= r_lo) {
      p.lone_sends.push_back(x);
    }
  }
  for (const auto& [n, x] : rn)
    if (n >= s_lo) p.lone_recvs.push_back(x);
  return p;
}

struct P2pProblem {
  MatchClass cls;
  int src, dst;
  const CollectiveRow *send, *recv;
  int64_t when;
};

// The earliest problem over every direction (ties: the first found), and how many
// send/receive pairs matched.
std::optional<P2pProblem> first_problem(P2pChannels& ends, const std::set<int>& recorded, int64_t& pairs) {
  std::optional<P2pProblem> first;
  const auto note = [&](P2pProblem p) {
    if (!first || p.when < first->when) first = p;
  };
  std::set<Channel> channels;
  for (const auto& [k, v] : ends.sends)
    channels.insert(k);
  for (const auto& [k, v] : ends.recvs)
    channels.insert(k);
  for (const auto& ch : channels) {
    const bool by_number = ends.wrapped.count(ch.first) || ends.wrapped.count(ch.second);
    const Pairing p = pair_ends(ends.sends[ch], ends.recvs[ch], by_number);
    for (const auto& [sd, rv] : p.matched) {
      ++pairs;
      const int64_t when = std::min(sd->t_created_ns, rv->t_created_ns);
      if (sd->input_sizes != rv->output_sizes)
        note({MatchClass::SizeMismatch, ch.first, ch.second, sd, rv, when});
      else if (sd->input_dtypes != rv->output_dtypes)
        note({MatchClass::DtypeMismatch, ch.first, ch.second, sd, rv, when});
    }
    // A lone end whose peer has records of this group: the peer never made its half.
    for (const CollectiveRow* x : p.lone_sends)
      if (recorded.count(ch.second)) note({MatchClass::MissingRanks, ch.first, ch.second, x, nullptr, x->t_created_ns});
    for (const CollectiveRow* x : p.lone_recvs)
      if (recorded.count(ch.first)) note({MatchClass::MissingRanks, ch.first, ch.second, nullptr, x, x->t_created_ns});
  }
  return first;
}

// Fills the finding's culprits and verdict from its problem `p`.
void describe_problem(GroupFinding& f, const std::string& name, const P2pProblem& p) {
  const std::string head = detail::concat("Group '", name, "' send/recv, rank ", p.src, " -> rank ", p.dst, ": ",
                                          match_class_name(p.cls), ". ");
  const auto tensors = [](const CollectiveRow& r, bool out) {
    return tensors_text(out ? r.output_sizes : r.input_sizes, out ? r.output_dtypes : r.input_dtypes);
  };
  if (p.cls == MatchClass::MissingRanks) {
    const bool no_recv = p.send != nullptr;
    const CollectiveRow& have = no_recv ? *p.send : *p.recv;
    const int culprit = no_recv ? p.dst : p.src;
    f.culprits = {culprit};
    f.others = {no_recv ? p.src : p.dst};
    f.verdict =
        head + detail::concat("Rank ", no_recv ? p.src : p.dst, no_recv ? " sent " : " posted a receive of ",
                              tensors(have, !no_recv), no_recv ? " to rank " : " from rank ", no_recv ? p.dst : p.src,
                              " (p2p #", have.p2p_seq, from_text(have), ", ", have.state, "), and rank ", culprit,
                              " never made the matching ", no_recv ? "receive" : "send", ".");
  } else {
    f.culprits = {p.src, p.dst};
    f.verdict =
        head + detail::concat("Rank ", p.src, " sent ", tensors(*p.send, false), " (p2p #", p.send->p2p_seq,
                              from_text(*p.send), ", ", p.send->state, ") and rank ", p.dst, " posted its receive as ",
                              tensors(*p.recv, true), " (p2p #", p.recv->p2p_seq, from_text(*p.recv), ", ",
                              p.recv->state, "): a send and its receive must have the same ",
                              p.cls == MatchClass::SizeMismatch ? "size" : "dtype",
                              "; the records do not say which side is wrong.");
  }
}

}  // namespace

// Sends and receives of one group, paired per direction (src -> dst): in order when no
// rank of the pair dropped older records (first record id 0), else by p2p number, as
// PyTorch's dumps number them. The first pair (or lone end) that does not match is the
// finding.
GroupFinding judge_p2p(const std::string& name, const FlightData& data) {
  GroupFinding f;
  f.group = name;
  f.p2p = true;
  const std::set<int> recorded = ranks_recording(name, data);
  f.members = group_members(name, data, recorded);
  P2pChannels ends = collect_channels(name, data, f.members);
  int64_t pairs = 0;
  const std::optional<P2pProblem> first = first_problem(ends, recorded, pairs);
  if (!first) {
    if (pairs > 0) f.seq = 0;  // reported as "every send had its receive"
    return f;
  }
  const P2pProblem& p = *first;
  f.cls = p.cls;
  f.p2p_src = p.src, f.p2p_dst = p.dst;
  if (p.send) f.calls[p.src] = *p.send;
  if (p.recv) f.calls[p.dst] = *p.recv;
  f.seq = p.send ? p.send->p2p_seq : p.recv->p2p_seq;
  f.pending = (p.send && p.send->state_order() < 2) || (p.recv && p.recv->state_order() < 2);
  describe_problem(f, name, p);
  return f;
}

}  // namespace ddpscope::probes
