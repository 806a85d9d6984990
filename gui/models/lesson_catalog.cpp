#include "lesson_catalog.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace ddpscope::gui {

const std::vector<LessonInfo>& lessons() {
  static const std::vector<LessonInfo> list = {
      {QStringLiteral("Distributed backward (FAST mode)"), QStringLiteral("seed-fast.ddprun"), QStringLiteral("seed"),
       QStringLiteral("fast"), 2,
       QStringLiteral("Worker 0 holds t1, t2 and t4; worker 1 adds t1 and t2. The forward has run: it recorded "
                      "a send and a recv function for each message (orange, in the graph from the first step). "
                      "Step through the backward: it runs on worker 0, sends the gradient of t3 to worker 1, "
                      "and comes back as the gradients of t1 and t2.")},
      {QStringLiteral("An unused RPC in FAST mode"), QStringLiteral("unused-fast.ddprun"), QStringLiteral("unused-rpc"),
       QStringLiteral("fast"), 2,
       QStringLiteral("e = b * c is computed on worker 1 but does not feed the loss. FAST mode counts every send "
                      "function of the context, so its send never gets a gradient and the pass ends with an "
                      "error naming it."),
       false, 1.0, 0, false, QStringLiteral("unused-smart.ddprun")},
      {QStringLiteral("The same graph in SMART mode"), QStringLiteral("unused-smart.ddprun"),
       QStringLiteral("unused-rpc"), QStringLiteral("smart"), 2,
       QStringLiteral("SMART mode first searches from the loss and asks each worker to activate only the send "
                      "functions on a path to it. The send of e is never asked for, and the pass completes."),
       false, 1.0, 0, false, QStringLiteral("unused-fast.ddprun")},
      {QStringLiteral("DDP's gradient buckets"), QStringLiteral("ddp-buckets.ddprun"), QStringLiteral("train"),
       QString(), 2,
       QStringLiteral("Rank 0 of a 2-rank DDP job (a 4-layer MLP, {cap} MiB buckets). Watch gradients arrive in "
                      "reverse order and fill their buckets, allreduces launch in bucket index order while "
                      "backward goes on, finalize wait for the last one, and iteration 2 start with the "
                      "buckets rebuilt in the order the gradients came."),
       true, 1.0},
      {QStringLiteral("Why a DDP job hangs"), QStringLiteral("ddp-unused.ddprun"), QStringLiteral("train"), QString(),
       2,
       QStringLiteral("The same job, but rank 1's model skips its second layer (train --inject-unused 1), and "
                      "DDP was not told (no --find-unused-parameters). Watch rank 1's bucket 1 wait for "
                      "gradients that never come, bucket 2 wait behind it, and the job end where the hang view "
                      "says each rank stood."),
       true, 1.0, 1, true},
      {QStringLiteral("ZeRO: who updates what"), QStringLiteral("zero-overlap.ddprun"), QStringLiteral("train"),
       QString(), 2,
       QStringLiteral("Rank 0 of the same DDP job with ZeroRedundancyOptimizer overlapped with DDP (AdamW). "
                      "Each rank owns part of the parameters and keeps AdamW's state for those only. Watch "
                      "rank 0 step its share of each bucket as soon as that bucket is reduced, and the step "
                      "end with every rank broadcasting what it updated."),
       true, 1.0, 0, false, QString(), true},
      {QStringLiteral("The ring allreduce"), QStringLiteral("ring-allreduce.ddprun"), QStringLiteral("ring"), QString(),
       4,
       QStringLiteral("Four ranks sum a tensor of four blocks around a ring: each sends to the next rank and "
                      "receives from the one before. Watch the reduce-scatter leave each rank with one block's "
                      "full sum after 3 steps, the all-gather pass those sums around in 3 more, and count what "
                      "each rank sent: 6 blocks of a quarter, 2(n-1)/n of the tensor, whatever n."),
       false, 1.0, 0, false, QString(), false, true},
  };
  return list;
}

QString lessonMenuTitle(size_t index) {
  return QStringLiteral("%1. %2").arg(index + 1).arg(index < lessons().size() ? lessons()[index].title : QString());
}

QString lessonsDir() {
  QStringList candidates;
  const QString env = qEnvironmentVariable("DDPSCOPE_LESSONS_DIR");
  if (!env.isEmpty()) candidates << env;
  const QDir app(QCoreApplication::applicationDirPath());
  candidates << app.filePath(QStringLiteral("../share/ddpscope/lessons"));
#ifdef DDPSCOPE_SOURCE_LESSONS_DIR
  candidates << QStringLiteral(DDPSCOPE_SOURCE_LESSONS_DIR);
#endif
  for (const QString& dir : candidates) {
    if (QFileInfo::exists(QDir(dir).filePath(lessons().front().file))) return QDir(dir).absolutePath();
  }
  return {};
}

QString lessonKindName(const LessonInfo& lesson) {
  return lesson.ring ? QStringLiteral("ring") : lesson.ddp ? QStringLiteral("ddp") : QStringLiteral("autograd");
}

QString liveVariant(const LessonInfo& lesson, const LiveParameters& p) {
  if (!lesson.ddp) return p.mode;
  QString variant = QStringLiteral("cap%1").arg(p.bucket_cap_mb);
  if (p.unused_parameter) variant += QStringLiteral("-unused");
  if (p.find_unused_parameters) variant += QStringLiteral("-find");
  return variant;
}

QStringList liveArguments(const LessonInfo& lesson, const LiveParameters& p, const QString& out) {
  if (!lesson.ddp) {
    return {QStringLiteral("example"), lesson.example, QStringLiteral("--np"),  QString::number(p.workers),
            QStringLiteral("--mode"),  p.mode,         QStringLiteral("--out"), out};
  }
  // The recordings' job (resources/lessons/record.sh) with the student's choices.
  QStringList a = {QStringLiteral("train"),
                   QStringLiteral("--np"),
                   QString::number(p.workers),
                   QStringLiteral("--model"),
                   QStringLiteral("mlp"),
                   QStringLiteral("--iters"),
                   QStringLiteral("3"),
                   QStringLiteral("--width"),
                   QStringLiteral("512"),
                   QStringLiteral("--depth"),
                   QStringLiteral("4"),
                   QStringLiteral("--batch"),
                   QStringLiteral("16"),
                   QStringLiteral("--bucket-cap-mb"),
                   QString::number(p.bucket_cap_mb),
                   QStringLiteral("--progress"),
                   QStringLiteral("lines"),
                   QStringLiteral("--out"),
                   out};
  if (p.unused_parameter) a << QStringLiteral("--inject-unused") << QStringLiteral("1");
  if (p.find_unused_parameters) a << QStringLiteral("--find-unused-parameters");
  if (lesson.zero) a << QStringLiteral("--zero-overlap") << QStringLiteral("--optimizer") << QStringLiteral("adamw");
  return a;
}

}  // namespace ddpscope::gui
