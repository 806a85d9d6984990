#include "bucket_lesson_view.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <algorithm>

#include "bucket_fill_view.h"
#include "lesson_graph_stage.h"

namespace ddpscope::gui {

BucketLessonView::BucketLessonView(QObject* parent) : LessonView(parent) {
  m_graph = new LessonGraphStage;
  m_buckets = new BucketFillView;
  m_bucketCap = new QDoubleSpinBox;
  m_bucketCap->setRange(0.05, 100);
  m_bucketCap->setDecimals(2);
  m_bucketCap->setSuffix(tr(" MiB"));
  m_bucketCap->setToolTip(tr("DDP lessons: bucket_cap_mb for Run live"));
  m_unused = new QCheckBox(tr("Unused layer on rank 1"));
  m_unused->setToolTip(tr("DDP lessons: rank 1's model skips a layer (train --inject-unused 1)"));
  m_findUnused = new QCheckBox(tr("find_unused_parameters"));
  m_findUnused->setToolTip(tr("DDP lessons: tell DDP that some parameters may get no gradient"));
  // The cap beside Workers, the two switches on a row of their own below: on one row
  // they made the page wider than a laptop's window leaves it.
  m_options = new QWidget;
  m_options->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Preferred);
  auto* rows = new QVBoxLayout(m_options);
  rows->setContentsMargins(0, 0, 0, 0);
  auto* cap = new QHBoxLayout;
  cap->addWidget(new QLabel(tr("Bucket cap")));
  cap->addWidget(m_bucketCap);
  cap->addStretch();  // the cap at the left, not spread across the switches' width
  auto* switches = new QHBoxLayout;
  switches->addWidget(m_unused);
  switches->addWidget(m_findUnused);
  rows->addLayout(cap);
  rows->addLayout(switches);
  connect(m_graph, &LessonGraphStage::answered, this, &LessonView::answered);
}

QWidget* BucketLessonView::stage() { return m_graph; }
QWidget* BucketLessonView::panel() { return m_buckets; }
GraphView* BucketLessonView::graph() { return m_graph; }

void BucketLessonView::setLesson(const Lesson& lesson) { m_graph->setLesson(lesson); }

void BucketLessonView::showState(const LessonState& s, size_t applied, bool asking) {
  m_graph->showState(s, applied, asking);
  m_buckets->setBuckets(s.buckets, s.generation);
}

QString BucketLessonView::title(const Lesson& lesson) const {
  return tr("rank %1 · its first iterations").arg(lesson.rank);
}

QString BucketLessonView::question(const LessonStep&) const { return LessonGraphStage::question(); }

// The lesson's words name the bucket cap the run was recorded with (a live re-recording at
// 0.25 MiB said "1 MiB buckets"), and say so when the cap cannot change the buckets: a
// parameter is never split, so one larger than the cap gets a bucket of its own.
QString BucketLessonView::about(const QString& about, const Lesson& lesson, const std::string& runConfig) const {
  QString text = about;
  const QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(runConfig)).object();
  const double cap = config.value(QStringLiteral("bucket_cap_mb")).toDouble(-1);
  if (cap <= 0) return text.replace(QStringLiteral("{cap} MiB buckets"), QStringLiteral("its buckets"));
  text.replace(QStringLiteral("{cap}"), QString::number(cap));
  const auto& bytes = lesson.layout.param_bytes;
  const int64_t largest = bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
  const auto capBytes = static_cast<int64_t>(cap * 1024 * 1024);
  const auto larger = std::count_if(bytes.begin(), bytes.end(), [&](int64_t b) { return b > capBytes; });
  if (larger > 0) {
    text += tr(" This run's cap is %1 MiB: %2 of its parameters (the largest %3 MiB) are bigger, and a parameter "
               "is never split, so each of them has a bucket of its own at any cap this small.")
                .arg(cap)
                .arg(larger)
                .arg(static_cast<double>(largest) / (1024.0 * 1024.0), 0, 'f', 2);
  }
  return text;
}

void BucketLessonView::setOptions(const LessonInfo& info) {
  m_bucketCap->setValue(info.bucket_cap_mb);
  m_unused->setChecked(info.unused_parameter);
  m_findUnused->setChecked(false);
}

void BucketLessonView::readOptions(LiveParameters& p) const {
  p.bucket_cap_mb = m_bucketCap->value();
  p.unused_parameter = m_unused->isChecked();
  p.find_unused_parameters = m_findUnused->isChecked();
}

}  // namespace ddpscope::gui
