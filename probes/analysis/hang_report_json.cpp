#include "hang_report_json.h"

#include "hang_stacks.h"

namespace ddpscope::probes {
namespace {

using Json = nlohmann::ordered_json;

Json rank_json(const RankHangState& st, const HangReport& report) {
  Json blocked = nullptr;
  if (st.blocked_in) {
    blocked = {{"op", st.blocked_in->op}, {"seq", st.blocked_in->seq}, {"bytes", st.blocked_in->bytes}};
    if (report.ages_known) blocked["waited_ms"] = (report.now_ns - st.blocked_in->started_ns) / 1e6;
  }
  Json row = {{"rank", st.rank},
              {"completed_iterations", st.completed_iterations},
              {"current_iteration", st.current_iteration},
              {"phase", hang_phase_words(st.phase)},
              {"last_event", st.last_event},
              {"blocked_in", blocked},
              {"latest_seq", st.latest_seq}};
  if (report.ages_known) row["quiet_ms"] = (report.now_ns - st.last_event_ns) / 1e6;
  if (st.params_total > 0) {
    row["buckets_waiting_for_gradients"] = st.buckets_waiting_for_grads;
    row["buckets_waiting_for_allreduce"] = st.buckets_waiting_for_allreduce;
    row["missing_gradients"] = st.missing_grads;
    row["parameters"] = st.params_total;
  }
  return row;
}

Json group_json(const GroupFinding& g) {
  return {{"group", g.group},     {"members", g.members},   {"match", match_class_name(g.cls)}, {"seq", g.seq},
          {"pending", g.pending}, {"culprits", g.culprits}, {"no_records", g.no_records},       {"verdict", g.verdict}};
}

}  // namespace

nlohmann::ordered_json hang_report_json(const HangReport& report) {
  Json out = {{"verdict", report.verdict.empty() ? Json(nullptr) : Json(report.verdict)},
              {"culprits", report.culprits},
              {"findings", report.findings},
              {"dead_rank", report.dead_rank >= 0 ? Json(report.dead_rank) : Json(nullptr)},
              {"dead_signal", report.dead_signal.empty() ? Json(nullptr) : Json(report.dead_signal)},
              {"ages_known", report.ages_known}};
  Json ranks = Json::array();
  for (const auto& st : report.ranks)
    ranks.push_back(rank_json(st, report));
  out["ranks"] = ranks;
  Json groups = Json::array();
  for (const auto& g : report.flight.groups)
    groups.push_back(group_json(g));
  out["groups"] = groups;
  out["stacks"] = stacks_json(report);  // each rank's latest stack capture (schema 12)
  nlohmann::ordered_json unanswering = nlohmann::ordered_json::array();
  for (const auto& [rank, why] : report.unanswering)
    unanswering.push_back({{"rank", rank}, {"why", why}});
  out["unanswering"] = unanswering;  // a running job's ranks stopped or gone (hang_processes.h)
  return out;
}

}  // namespace ddpscope::probes
