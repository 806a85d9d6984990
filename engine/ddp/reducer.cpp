#include "reducer.h"

#include <algorithm>
#include <unordered_set>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "cpu_wait.h"
#include "probe.h"
#include "records.h"
#include "tensor/kernels.h"
#include "ddpscope/plural.h"

namespace ddpscope::ddp {

std::shared_ptr<Reducer> Reducer::create(std::vector<Tensor> params, std::vector<std::string> names,
                                         std::shared_ptr<c10d::ProcessGroup> group, std::vector<BucketSpec> buckets,
                                         ReducerOptions options) {
  auto reducer =
      std::make_shared<Reducer>(std::move(params), std::move(names), std::move(group), std::move(buckets), options);
  reducer->install_hooks();
  return reducer;
}

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::string> names, std::shared_ptr<c10d::ProcessGroup> group,
                 std::vector<BucketSpec> buckets, ReducerOptions options)
    : params_(std::move(params)),
      names_(std::move(names)),
      group_(std::move(group)),
      options_(options),
      initial_specs_(buckets),
      locators_(params_.size()),
      ready_(params_.size(), false),
      locally_used_(params_.size(), false) {
  build_buckets(std::move(buckets));
}

void Reducer::build_buckets(std::vector<BucketSpec> specs) {
  specs_ = std::move(specs);
  buckets_.clear();
  for (size_t b = 0; b < specs_.size(); ++b) {
    Bucket bucket;
    bucket.spec = specs_[b];
    int64_t numel = 0;
    for (size_t p : bucket.spec.params)
      numel += params_[p].numel();
    bucket.contents = Tensor::zeros({numel}, bucket.spec.dtype, bucket.spec.device);
    int64_t offset = 0;
    for (size_t slot = 0; slot < bucket.spec.params.size(); ++slot) {
      const Tensor& p = params_[bucket.spec.params[slot]];
      bucket.views.push_back(bucket.contents.narrow(0, offset, p.numel()).view(p.sizes()));
      locators_[bucket.spec.params[slot]] = {b, slot};
      offset += p.numel();
    }
    buckets_.push_back(std::move(bucket));
  }
  record_assignment();
}

void Reducer::record_assignment() {
  if (!probes::enabled()) return;
  std::vector<probes::BucketRecord> buckets;
  std::vector<probes::ParamRecord> params(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    probes::BucketRecord r{static_cast<int32_t>(b), static_cast<int64_t>(specs_[b].bytes), {}};
    int64_t offset = 0;
    for (size_t p : specs_[b].params) {
      r.params.push_back(static_cast<int32_t>(p));
      params[p] = {static_cast<int32_t>(p), names_[p], params_[p].sizes(), dtype_name(params_[p].dtype()),
                   static_cast<int32_t>(b), offset};
      offset += params_[p].numel();
    }
    buckets.push_back(std::move(r));
  }
  probes::record_bucket_assignment(rebuilt_ || rebuild_attempted_ ? 1 : 0, buckets, params);
}

void Reducer::maybe_rebuild_buckets() {
  // A static graph keeps its order, so it rebuilds even with unused parameters.
  if (rebuild_attempted_ || !options_.rebuild_buckets || (options_.find_unused_parameters && !options_.static_graph) ||
      completed_iterations_ == 0) {
    return;
  }
  rebuild_attempted_ = true;
  rebuild_buckets();
}

void Reducer::rebuild_buckets() {
  // Rank 0's observed order, so every rank builds the same buckets. If rank 0 has no
  // complete order (it joined before training), every rank sees that and keeps the
  // buckets it has.
  Tensor order = Tensor::full({static_cast<int64_t>(params_.size())}, -1.0, DType::I64);
  // Unused parameters (ready before backward began) go last.
  std::vector<size_t> observed = ready_order_;
  observed.insert(observed.end(), unused_.begin(), unused_.end());
  if (observed.size() == params_.size()) {
    for (size_t k = 0; k < observed.size(); ++k)
      order.data<int64_t>()[k] = static_cast<int64_t>(observed[k]);
  }
  Tensor on_group = order.to(group_->tensor_device());
  group_->broadcast(on_group, {.root = 0})->wait();
  order = on_group.to(Device::cpu());
  std::vector<size_t> ready(params_.size());
  std::vector<bool> seen(params_.size(), false);
  for (size_t k = 0; k < ready.size(); ++k) {
    const int64_t v = order.data<int64_t>()[k];
    if (v < 0 || v >= static_cast<int64_t>(params_.size()) || seen[v]) return;
    seen[v] = true;
    ready[k] = static_cast<size_t>(v);
  }
  build_buckets(assign_buckets(params_, options_.caps, ready));
  if (options_.gradient_as_bucket_view) {
    autograd::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].grad().defined()) continue;
      const Locator& l = locators_[i];
      const Tensor& view = buckets_[l.bucket].views[l.slot];
      view.copy_(params_[i].grad());
      params_[i].set_grad(view);
    }
  }
  rebuilt_ = true;
}

void Reducer::register_comm_hook(CommHook hook) {
  DDPSCOPE_CHECK(completed_iterations_ == 0 && !backward_in_progress_,
                 "register_comm_hook: register the hook before the first backward");
  DDPSCOPE_CHECK(!hook_, "register_comm_hook: a hook is already registered; only one is allowed");
  hook_ = std::move(hook);
}

void Reducer::install_hooks() {
  std::weak_ptr<Reducer> self = weak_from_this();
  for (size_t i = 0; i < params_.size(); ++i) {
    autograd::register_post_accumulate_grad_hook(params_[i], [self, i](const Tensor&) {
      if (auto reducer = self.lock()) reducer->autograd_hook(i);
    });
  }
}

std::string Reducer::parameters_without_gradients() const {
  if (finished_last_ || backward_in_progress_) return {};
  std::vector<size_t> missing;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!ready_[i]) missing.push_back(i);
  }
  return missing.empty() ? std::string() : names_of(missing);
}

std::string Reducer::names_of(const std::vector<size_t>& params) const {
  std::string out;
  for (size_t p : params)
    out += (out.empty() ? "" : ", ") + names_[p];
  return out;
}

Reducer::~Reducer() { offer_destinations(false); }

void Reducer::offer_destinations(bool offer) {
  if (!offer && !offered_) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Locator& l = locators_[i];
    autograd::offer_gradient_destination(params_[i], offer ? buckets_[l.bucket].views[l.slot] : Tensor());
  }
  offered_ = offer;
}

Tensor Reducer::grad_of(size_t param) const {
  return dist_ctx_ ? dist_ctx_->gradient(params_[param]) : params_[param].grad();
}

void Reducer::set_grad_of(size_t param, Tensor grad) {
  if (dist_ctx_) {
    dist_ctx_->set_gradient(params_[param], std::move(grad));
  } else {
    params_[param].set_grad(std::move(grad));
  }
}

void Reducer::detach_grad_from_bucket(size_t param) {
  if (dist_ctx_) return;  // a context's gradients never alias the buckets
  const Tensor& grad = params_[param].grad();
  if (options_.gradient_as_bucket_view || !grad.defined()) return;
  if (grad.shares_storage_with(buckets_[locators_[param].bucket].contents)) params_[param].set_grad(grad.clone());
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  if (!sync_enabled_) {
    // no_sync: gradients accumulate in .grad's own memory, and the buckets stay as the
    // last synchronised backward left them.
    offer_destinations(false);
    expect_backward_ = false;
    return;
  }
  if (!finished_last_) {
    std::vector<size_t> missing;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!ready_[i]) missing.push_back(i);
    }
    finished_last_ = true;
    throw DDPSCOPE_ERROR("DDP on rank ", group_->rank(), ": the previous backward did not produce gradients for ",
                         count_of(static_cast<int64_t>(missing.size()), "parameter"), ": ", names_of(missing),
                         ". Their buckets were never reduced, so the ranks would wait for each other forever. If "
                         "the "
                         "model does not use every parameter in every forward, construct DistributedDataParallel "
                         "with find_unused_parameters=true; otherwise make sure the loss depends on every output");
  }
  maybe_rebuild_buckets();
  std::fill(ready_.begin(), ready_.end(), false);
  for (Bucket& b : buckets_) {
    b.pending = b.spec.params.size();
    b.result.reset();
  }
  ready_order_.clear();
  unused_.clear();
  next_bucket_ = 0;
  gradients_copied_ = 0;
  offer_destinations(true);
  expect_backward_ = true;
  prepared_at_ = std::chrono::steady_clock::now();
  // Which parameters get no gradient this backward: found by walking the graph every
  // iteration (find_unused_parameters), or once and then remembered (static_graph).
  if (options_.find_unused_parameters || (options_.static_graph && !static_unused_known_)) {
    unused_ = find_unused(outputs);
    if (options_.static_graph) {
      static_unused_ = unused_;
      static_unused_known_ = true;
    }
  } else if (options_.static_graph) {
    unused_ = static_unused_;
  }
}

void Reducer::mark_unused_ready() {
  // Done when backward starts, not at the end of forward: a zero_grad() in between
  // counts. A parameter this forward did not use contributes the .grad it has (say,
  // accumulated under no_sync), or zeros; either way its bucket still fills.
  autograd::NoGradGuard no_grad;
  for (size_t i : unused_) {
    const Locator& l = locators_[i];
    const Tensor& view = buckets_[l.bucket].views[l.slot];
    detach_grad_from_bucket(i);
    const Tensor grad = grad_of(i);
    if (!grad.defined()) {
      view.zero_();
    } else if (!grad.is_same_view_as(view)) {
      view.copy_(grad);
      ++gradients_copied_;
    }
    ready_[i] = true;
    --buckets_[l.bucket].pending;
  }
  launch_ready_buckets();
}

std::vector<size_t> Reducer::find_unused(const std::vector<Tensor>& outputs) {
  ++graph_walks_;
  std::unordered_set<const TensorImpl*> reached;
  std::vector<const autograd::Node*> stack;
  std::unordered_set<const autograd::Node*> seen;
  for (const Tensor& out : outputs) {
    if (auto fn = out.grad_fn()) stack.push_back(fn.get());
  }
  while (!stack.empty()) {
    const autograd::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (auto* acc = dynamic_cast<const autograd::AccumulateGrad*>(n)) reached.insert(acc->variable().impl());
    for (const autograd::Edge& e : n->next_edges()) {
      if (e.is_valid()) stack.push_back(e.function.get());
    }
  }
  std::vector<size_t> unused;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!reached.count(params_[i].impl())) unused.push_back(i);
  }
  return unused;
}

void Reducer::autograd_hook(size_t param) {
  // Used in this backward, or in one under no_sync since the last reduction: either way
  // its gradient is part of what the next reduction averages.
  if (!backward_in_progress_) {
    // Inside a distributed autograd context, gradients live in the context (seed 004).
    const int64_t ctx = dist_autograd::ContextContainer::current_id();
    dist_ctx_ = ctx >= 0 ? dist_autograd::ContextContainer::instance().find(ctx) : nullptr;
  }
  if (grad_of(param).defined()) locally_used_[param] = true;
  if (!sync_enabled_ || !expect_backward_) return;  // no_sync, or a backward DDP did not prepare
  if (!backward_in_progress_) {
    backward_in_progress_ = true;
    finished_last_ = false;
    std::weak_ptr<Reducer> self = weak_from_this();
    autograd::queue_callback([self] {
      if (auto reducer = self.lock()) reducer->finalize_backward();
    });
    mark_unused_ready();
  }
  mark_variable_ready(param);
}

void Reducer::mark_variable_ready(size_t param) {
  DDPSCOPE_CHECK(!ready_[param], "DDP: parameter ", names_[param],
                 " received its gradient twice in one backward; with static_graph off this means it "
                 "is used by a reentrant backward, which DDP does not support");
  ready_[param] = true;
  last_ready_at_ = std::chrono::steady_clock::now();
  DDPSCOPE_INSTANT(probes::Kind::GradReady, "grad_ready", {.param = static_cast<int32_t>(param)});
  ready_order_.push_back(param);
  const Locator& l = locators_[param];
  Bucket& bucket = buckets_[l.bucket];
  const Tensor grad = grad_of(param);
  const Tensor& view = bucket.views[l.slot];
  // A gradient computed straight into its slot (or, with gradient_as_bucket_view,
  // accumulated into it) is there already.
  if (!grad.is_same_view_as(view)) {
    DDPSCOPE_SPAN(copy_span, probes::Kind::BucketCopy, "bucket_copy");
    copy_span.args().param = static_cast<int32_t>(param);
    copy_span.args().bucket = static_cast<int16_t>(l.bucket);
    copy_span.args().bytes = static_cast<int64_t>(grad.defined() ? grad.nbytes() : 0);
    autograd::NoGradGuard no_grad;
    view.copy_(grad);
    ++gradients_copied_;
    // With gradient_as_bucket_view, .grad becomes the bucket's view from now on: later
    // backwards accumulate straight into the bucket.
    if (options_.gradient_as_bucket_view && !dist_ctx_) params_[param].set_grad(view);
  }
  if (--bucket.pending == 0) launch_ready_buckets();
}

void Reducer::launch_ready_buckets() {
  // Launch strictly in index order: every rank must issue the same collectives in the
  // same order, whatever order its gradients arrive in.
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& b = buckets_[next_bucket_++];
    b.launched_at = std::chrono::steady_clock::now();
    DDPSCOPE_INSTANT(probes::Kind::BucketReady, "bucket_ready",
                     {.bucket = static_cast<int16_t>(next_bucket_ - 1), .bytes = static_cast<int64_t>(b.spec.bytes)});
    b.result = reduce_bucket(next_bucket_ - 1);
    // Stamp when the reduction really finished (the completing thread runs this).
    b.done_at = std::make_shared<std::atomic<std::chrono::steady_clock::time_point>>();
    b.result->add_done_callback([at = b.done_at](c10d::Future&) { *at = std::chrono::steady_clock::now(); });
  }
}

std::shared_ptr<c10d::Future> Reducer::reduce_bucket(size_t index) {
  Bucket& b = buckets_[index];
  if (hook_) {
    b.work.reset();
    GradBucket gb{index, b.contents, {}, index + 1 == buckets_.size()};
    for (size_t p : b.spec.params)
      gb.parameters.push_back(params_[p]);
    DDPSCOPE_SPAN(span, probes::Kind::CommHook, "comm_hook");
    span.args().bucket = static_cast<int16_t>(index);
    span.args().bytes = static_cast<int64_t>(b.spec.bytes);
    auto result = hook_(gb);
    DDPSCOPE_CHECK(result != nullptr, "DDP: the comm hook returned no future for bucket ", index);
    return result;
  }
  // Sum now, divide in finalize: the divisor is the world size, or the ranks still
  // training under join.
  b.work = group_->allreduce(b.contents, {.op = c10d::ReduceOp::Sum});
  return b.work->get_future();
}

void Reducer::reduce_used_map(std::vector<bool>& used) {
  Tensor map = Tensor::zeros({static_cast<int64_t>(params_.size())}, DType::I64);
  for (size_t i = 0; i < params_.size(); ++i)
    map.data<int64_t>()[i] = used[i] ? 1 : 0;
  Tensor on_group = map.to(group_->tensor_device());
  group_->allreduce(on_group, {.op = c10d::ReduceOp::Max})->wait();
  map = on_group.to(Device::cpu());
  for (size_t i = 0; i < params_.size(); ++i)
    used[i] = map.data<int64_t>()[i] != 0;
}

void Reducer::shadow_iteration(bool write_gradients) {
  maybe_rebuild_buckets();
  for (size_t i = 0; i < params_.size(); ++i)
    detach_grad_from_bucket(i);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    b.contents.zero_();
    const std::vector<Tensor>& out = reduce_bucket(i)->wait();
    if (write_gradients && !out.empty() && !out[0].shares_storage_with(b.contents))
      b.contents.copy_(out[0].view(b.contents.sizes()));
  }
  std::vector<bool> used(params_.size(), true);
  if (options_.find_unused_parameters || (options_.static_graph && static_globally_used_.empty())) {
    std::fill(used.begin(), used.end(), false);  // this rank used none
    reduce_used_map(used);
    if (options_.static_graph) static_globally_used_ = used;
  } else if (options_.static_graph) {
    used = static_globally_used_;
  }
  if (write_gradients) {
    autograd::NoGradGuard no_grad;
    for (Bucket& b : buckets_)
      write_back(b, used);
  }
  ++completed_iterations_;
}

void Reducer::record_stats() {
  using Ms = std::chrono::duration<double, std::milli>;
  // Reduction intervals: the op's own start/end when we ran it, else launch -> done.
  std::vector<std::pair<TimePoint, TimePoint>> spans;
  for (const Bucket& b : buckets_) {
    if (!b.result) continue;
    if (b.work && b.work->started_at() != TimePoint{}) {
      spans.emplace_back(b.work->started_at(), b.work->finished_at());
    } else {
      spans.emplace_back(b.launched_at, b.done_at->load());
    }
    [[maybe_unused]] const auto ns = [](TimePoint t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    [[maybe_unused]] const probes::EventArgs args{.bucket = static_cast<int16_t>(&b - buckets_.data()),
                                                  .bytes = static_cast<int64_t>(b.spec.bytes),
                                                  .id = b.work ? static_cast<int64_t>(b.work->sequence_number()) : -1};
    if (hook_) {
      DDPSCOPE_RECORD(probes::Kind::Allreduce, "comm_hook_reduce", ns(spans.back().first), ns(spans.back().second),
                      args);
    } else {
      DDPSCOPE_RECORD(probes::Kind::Allreduce, "allreduce", ns(spans.back().first), ns(spans.back().second), args);
    }
  }
  std::sort(spans.begin(), spans.end());
  double comm = 0, exposed = 0;
  TimePoint covered_to{};
  for (auto [start, end] : spans) {
    start = std::max(start, covered_to);  // union: skip what earlier spans covered
    if (end <= start) continue;
    comm += Ms(end - start).count();
    // Anything after the last gradient was ready ran with no backward to hide behind.
    const TimePoint exposed_from = std::max(start, last_ready_at_);
    if (end > exposed_from) exposed += Ms(end - exposed_from).count();
    covered_to = end;
  }
  stats_.iteration = completed_iterations_;
  stats_.backward_compute_ms = Ms(last_ready_at_ - prepared_at_).count();
  stats_.backward_comm_ms = comm;
  stats_.overlap_ms = comm - exposed;
  stats_.bucket_bytes.clear();
  for (const Bucket& b : buckets_)
    stats_.bucket_bytes.push_back(b.spec.bytes);
  stats_.ready_order = ready_order_;
  stats_.gradients_copied = gradients_copied_;
  stats_.unused_parameters.clear();
  for (size_t i : unused_)
    stats_.unused_parameters.push_back(names_[i]);
}

void Reducer::finalize_backward() {
  DDPSCOPE_SPAN(span, probes::Kind::Finalize, "finalize");
  // Backward's compute is done; waiting for the buckets (and waking from it) is not backward
  // for the cause analysis (cpu_wait.h).
  if (probes::enabled()) probes::enter_cpu_phase(probes::CpuPhase::Outside);
  // The context is this backward's only: forget it however finalize ends.
  struct ForgetContext {
    std::shared_ptr<dist_autograd::DistAutogradContext>& ctx;
    ~ForgetContext() { ctx.reset(); }
  } forget{dist_ctx_};
  backward_in_progress_ = false;
  expect_backward_ = false;
  autograd::NoGradGuard no_grad;
  // Buckets that never launched hold parameters without gradients: leave them, and let
  // the next forward report them by name (see prepare_for_backward).
  const bool all_launched = next_bucket_ == buckets_.size();
  // With find_unused_parameters, a parameter no rank used keeps its gradient untouched
  // (as if DDP were not there): the ranks share which parameters they used, after the
  // buckets. Without that exchange, each bucket's gradients go back as soon as its
  // reduction is done, while later buckets are still being reduced.
  const bool share_used_map =
      options_.find_unused_parameters || (options_.static_graph && static_globally_used_.empty());
  std::vector<bool> globally_used(params_.size(), true);
  if (options_.static_graph && !static_globally_used_.empty())
    globally_used = static_globally_used_;  // the graph does not change
  const bool write_back_early = all_launched && !share_used_map;
  for (Bucket& b : buckets_) {
    if (!b.result) continue;
    const std::vector<Tensor>& out = b.result->wait();
    DDPSCOPE_CHECK(out.size() == 1 && out[0].numel() == b.contents.numel(), "DDP: the comm hook's future for bucket ",
                   &b - buckets_.data(), " must hold one tensor of ", b.contents.numel(), " elements");
    if (!out[0].shares_storage_with(b.contents)) b.contents.copy_(out[0].view(b.contents.sizes()));
    if (write_back_early) {
      write_back(b, globally_used);
      bucket_reduced(b);
    }
  }
  if (!all_launched) return;
  finished_last_ = true;
  ++completed_iterations_;
  record_stats();
  if (write_back_early) {
    std::fill(locally_used_.begin(), locally_used_.end(), false);
    return;
  }
  globally_used = locally_used_;
  std::fill(locally_used_.begin(), locally_used_.end(), false);
  reduce_used_map(globally_used);
  if (options_.static_graph) static_globally_used_ = globally_used;
  for (Bucket& b : buckets_)
    write_back(b, globally_used);
  for (Bucket& b : buckets_)
    bucket_reduced(b);
}

void Reducer::bucket_reduced(Bucket& b) {
  if (bucket_reduced_hook_ && !dist_ctx_)
    bucket_reduced_hook_(static_cast<size_t>(&b - buckets_.data()), b.spec.params);
}

void Reducer::write_back(Bucket& b, const std::vector<bool>& globally_used) {
  // Without a hook the bucket holds sums. The average is taken on the way into .grad
  // (one pass over the gradients instead of a scale and then a copy), or in place when
  // .grad is a view of the bucket.
  const double factor = hook_ ? 1.0 : 1.0 / (divisor_ > 0 ? divisor_ : group_->size());
  if (options_.gradient_as_bucket_view && factor != 1.0) kernels::scale_(b.contents, factor);
  for (size_t slot = 0; slot < b.spec.params.size(); ++slot) {
    const size_t i = b.spec.params[slot];
    if (!globally_used[i]) continue;
    const Tensor& view = b.views[slot];
    if (dist_ctx_) {
      // Into the context, always as a tensor of its own (the bucket is reused).
      Tensor g = Tensor::empty(view.sizes(), view.dtype(), view.device());
      kernels::copy_scaled(g, view, options_.gradient_as_bucket_view ? 1.0 : factor);
      set_grad_of(i, std::move(g));
      continue;
    }
    if (options_.gradient_as_bucket_view) {
      if (!params_[i].grad().defined() || !params_[i].grad().shares_storage_with(view)) params_[i].set_grad(view);
      continue;
    }
    // Fresh memory when there is no .grad (unused here, used elsewhere) or when the
    // gradient was computed into the bucket, which the next backward overwrites.
    if (!params_[i].grad().defined() || params_[i].grad().shares_storage_with(b.contents))
      params_[i].set_grad(Tensor::empty(view.sizes(), view.dtype(), view.device()));
    kernels::copy_scaled(params_[i].grad(), view, factor);
  }
}

}  // namespace ddpscope::ddp
