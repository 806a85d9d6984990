#include "launch_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

namespace ddpscope::gui {
namespace {

QSpinBox* spin(int lo, int hi) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  return s;
}

QDoubleSpinBox* mibBox() {
  auto* box = new QDoubleSpinBox;
  box->setRange(0, 100000);
  box->setDecimals(2);
  box->setSuffix(LaunchDialog::tr(" MiB"));
  return box;
}

}  // namespace

LaunchDialog::LaunchDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Launch a training job"));
  auto* layout = new QVBoxLayout(this);
  m_grid = new QGridLayout;
  layout->addLayout(m_grid);
  addKindRow();
  addScriptRows();
  addJobRows();
  addDdpRows();
  m_status = new QLabel;
  m_status->setWordWrap(true);
  layout->addWidget(m_status);
  layout->addWidget(buildButtons());
  setConfig(LaunchConfig{});
  revalidateOnEdits();
  revalidate();
  restoreLastConfig();
}

// ddpscope's own model, or a PyTorch script of the user's.
void LaunchDialog::addKindRow() {
  m_job = new QComboBox;
  m_job->addItem(tr("ddpscope model (train)"), QStringLiteral("train"));
  m_job->addItem(tr("PyTorch script (torchrun)"), QStringLiteral("torch"));
  m_job->setToolTip(
      tr("A PyTorch script runs unchanged, as torchrun runs it; its DDP buckets, gradients and collectives "
         "are recorded"));
  addRow(QStringLiteral("job"), tr("Job"), m_job);
}

QWidget* LaunchDialog::fileRow(QLineEdit* edit, const QString& title) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* browse = new QPushButton(tr("Browse..."));
  layout->addWidget(edit);
  layout->addWidget(browse);
  connect(browse, &QPushButton::clicked, this, [this, edit, title] {
    const QString f = QFileDialog::getOpenFileName(this, title);
    if (!f.isEmpty()) edit->setText(f);
  });
  return row;
}

// A PyTorch script: the script, its own arguments and the python to run it with.
void LaunchDialog::addScriptRows() {
  m_script = new QLineEdit;
  m_script->setPlaceholderText(tr("train.py: a DDP script as torchrun runs it"));
  addRow(QStringLiteral("script"), tr("Script"), fileRow(m_script, tr("PyTorch training script")));
  m_scriptArguments = new QLineEdit;
  m_scriptArguments->setPlaceholderText(tr("the script's own arguments, e.g. --epochs 2 --lr 0.1"));
  addRow(QStringLiteral("script_arguments"), tr("Script arguments"), m_scriptArguments);
  m_python = new QLineEdit;
  m_python->setToolTip(tr("Any python that has torch"));
  addRow(QStringLiteral("python"), tr("Interpreter"), fileRow(m_python, tr("Python interpreter")));
}

// What runs where: the model and its size, the ranks, their hosts and backend.
void LaunchDialog::addJobRows() {
  m_model = new QComboBox;
  m_model->addItems({QStringLiteral("mlp"), QStringLiteral("transformer")});
  addRow(QStringLiteral("model"), tr("Model"), m_model);
  m_worldSize = spin(0, 1024);  // 0 is accepted by the box so validation can explain it
  addRow(QStringLiteral("world_size"), tr("World size (ranks)"), m_worldSize);
  auto* hostRow = new QWidget;
  auto* hostLayout = new QHBoxLayout(hostRow);
  hostLayout->setContentsMargins(0, 0, 0, 0);
  m_hostfile = new QLineEdit;
  m_hostfile->setPlaceholderText(tr("empty: every rank on this machine"));
  auto* browse = new QPushButton(tr("Browse..."));
  hostLayout->addWidget(m_hostfile);
  hostLayout->addWidget(browse);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("mpirun hostfile"));
    if (!f.isEmpty()) m_hostfile->setText(f);
  });
  addRow(QStringLiteral("hostfile"), tr("Hosts (hostfile)"), hostRow);
  m_backend = new QComboBox;
  m_backend->addItems({QStringLiteral("mpi"), QStringLiteral("nccl")});
  addRow(QStringLiteral("backend"), tr("Backend"), m_backend);
  m_iterations = spin(0, 100000000);
  addRow(QStringLiteral("iterations"), tr("Iterations"), m_iterations);
  m_batch = spin(0, 1000000);
  addRow(QStringLiteral("batch"), tr("Batch per rank"), m_batch);
  m_width = spin(0, 65536);
  addRow(QStringLiteral("width"), tr("Width (MLP) / d_model"), m_width);
  m_depth = spin(0, 1024);
  addRow(QStringLiteral("depth"), tr("Depth (layers / blocks)"), m_depth);
}

// DDP's options, the probes and any other train option.
void LaunchDialog::addDdpRows() {
  m_bucketCap = mibBox();
  addRow(QStringLiteral("bucket_cap_mb"), tr("bucket_cap_mb"), m_bucketCap);
  m_firstBucketCap = mibBox();
  m_firstBucketCap->setToolTip(tr("The first bucket's cap (PyTorch: 1 MiB): its allreduce starts early in backward"));
  addRow(QStringLiteral("first_bucket_cap_mb"), tr("first_bucket_cap_mb"), m_firstBucketCap);
  m_findUnused = new QCheckBox(tr("find_unused_parameters"));
  addRow(QStringLiteral("find_unused_parameters"), QString(), m_findUnused);
  m_bucketView = new QCheckBox(tr("gradient_as_bucket_view"));
  addRow(QStringLiteral("gradient_as_bucket_view"), QString(), m_bucketView);
  m_staticGraph = new QCheckBox(tr("static_graph"));
  addRow(QStringLiteral("static_graph"), QString(), m_staticGraph);
  m_fusedOptimizer = new QCheckBox(tr("fused optimizer (step each bucket once reduced)"));
  m_fusedOptimizer->setToolTip(
      tr("The optimizer steps each bucket's parameters as soon as its allreduce is "
         "done, hidden behind the later buckets' communication; same result"));
  addRow(QStringLiteral("fused_optimizer"), QString(), m_fusedOptimizer);
  m_zero = new QCheckBox(tr("ZeRO (each rank keeps its shard's optimizer state)"));
  m_zero->setToolTip(tr("ZeroRedundancyOptimizer: each rank steps its shard of the parameters and broadcasts it"));
  addRow(QStringLiteral("zero"), QString(), m_zero);
  m_zeroOverlap = new QCheckBox(tr("ZeRO overlapped with DDP (shard steps during backward)"));
  m_zeroOverlap->setToolTip(tr("PyTorch's overlap_with_ddp: each bucket's shard is stepped once it is reduced"));
  addRow(QStringLiteral("zero_overlap"), QString(), m_zeroOverlap);
  m_batchNorm = new QCheckBox(tr("BatchNorm (MLP)"));
  addRow(QStringLiteral("batch_norm"), QString(), m_batchNorm);
  m_syncBn = new QCheckBox(tr("SyncBatchNorm (statistics over every rank's samples)"));
  addRow(QStringLiteral("sync_bn"), QString(), m_syncBn);
  m_commHook = new QComboBox;
  m_commHook->addItems(
      {QStringLiteral("allreduce"), QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("powersgd")});
  addRow(QStringLiteral("comm_hook"), tr("Comm hook"), m_commHook);
  m_probes = new QCheckBox(tr("Record probes (needed for the views)"));
  addRow(QStringLiteral("probes"), QString(), m_probes);
  m_extra = new QLineEdit;
  m_extra->setPlaceholderText(tr("more train options, e.g. --lr 0.01 --inject-stall 1:5:30"));
  addRow(QStringLiteral("extra_arguments"), tr("Extra arguments"), m_extra);
}

QDialogButtonBox* LaunchDialog::buildButtons() {
  m_buttons = new QDialogButtonBox(QDialogButtonBox::Cancel);
  m_buttons->addButton(tr("Launch"), QDialogButtonBox::AcceptRole);
  auto* save = m_buttons->addButton(tr("Save preset..."), QDialogButtonBox::ActionRole);
  auto* load = m_buttons->addButton(tr("Load preset..."), QDialogButtonBox::ActionRole);
  connect(m_buttons, &QDialogButtonBox::accepted, this, [this] {
    if (!canLaunch()) return;
    if (m_check) {
      const QString refused = m_check(config());
      if (!refused.isEmpty()) {
        m_errors.value(QStringLiteral("extra_arguments"))->setText(refused);
        m_status->setText(tr("ddpscope-cli refused this job: %1").arg(refused));
        return;
      }
    }
    // The next dialog opens with what was launched last (the user's settings).
    QSettings().setValue(kLastConfigKey,
                         QString::fromUtf8(QJsonDocument(toJson(config())).toJson(QJsonDocument::Compact)));
    accept();
  });
  connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(save, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("Save preset"), QString(), tr("Presets (*.json)"));
    if (!f.isEmpty()) savePresetTo(f);
  });
  connect(load, &QPushButton::clicked, this, [this] {
    const QString f =
        QFileDialog::getOpenFileName(this, tr("Load preset"), QString(), tr("Presets (*.json);;All files (*)"));
    if (!f.isEmpty()) loadPresetFrom(f);
  });

  return m_buttons;
}

void LaunchDialog::revalidateOnEdits() {
  for (QSpinBox* s : {m_worldSize, m_iterations, m_batch, m_width, m_depth})
    connect(s, &QSpinBox::valueChanged, this, &LaunchDialog::revalidate);
  connect(m_bucketCap, &QDoubleSpinBox::valueChanged, this, &LaunchDialog::revalidate);
  connect(m_firstBucketCap, &QDoubleSpinBox::valueChanged, this, &LaunchDialog::revalidate);
  connect(m_hostfile, &QLineEdit::textChanged, this, &LaunchDialog::revalidate);
  connect(m_extra, &QLineEdit::textChanged, this, &LaunchDialog::revalidate);
  for (QLineEdit* e : {m_script, m_python, m_scriptArguments})
    connect(e, &QLineEdit::textChanged, this, &LaunchDialog::revalidate);
  connect(m_job, &QComboBox::currentIndexChanged, this, [this] {
    showRowsOfKind();
    revalidate();
  });
  for (QComboBox* c : {m_model, m_backend, m_commHook})
    connect(c, &QComboBox::currentTextChanged, this, &LaunchDialog::revalidate);
  for (QCheckBox* c : {m_findUnused, m_bucketView, m_staticGraph, m_fusedOptimizer, m_zero, m_zeroOverlap, m_batchNorm,
                       m_syncBn, m_probes})
    connect(c, &QCheckBox::toggled, this, &LaunchDialog::revalidate);
}

namespace {

// `arguments` without its fault injections (--inject-stall 1:5:30, --inject-slow=...), which
// are put in `dropped`.
QString withoutInjections(const QString& arguments, QStringList& dropped) {
  const QStringList words = arguments.split(QLatin1Char(' '), Qt::SkipEmptyParts);
  QStringList kept;
  for (qsizetype i = 0; i < words.size(); ++i) {
    if (!words[i].startsWith(QLatin1String("--inject-"))) {
      kept << words[i];
      continue;
    }
    QString injection = words[i];
    if (!injection.contains(QLatin1Char('=')) && i + 1 < words.size() && !words[i + 1].startsWith(QLatin1String("--")))
      injection += QLatin1Char(' ') + words[++i];
    dropped << injection;
  }
  return kept.join(QLatin1Char(' '));
}

}  // namespace

// Reopened, the dialog shows the last launched job's values, not the defaults; but not its
// fault injections: a fault is injected on purpose, for one job, and a second job that stalls
// because the first was asked to would surprise. The dialog says what it dropped.
void LaunchDialog::restoreLastConfig() {
  const QString last = QSettings().value(kLastConfigKey).toString();
  if (!last.isEmpty()) {
    QString error;
    LaunchConfig remembered = launchConfigFromJson(QJsonDocument::fromJson(last.toUtf8()).object(), &error);
    if (!error.isEmpty()) return;
    QStringList dropped;
    remembered.extraArguments = withoutInjections(remembered.extraArguments, dropped);
    if (!dropped.isEmpty())
      m_restoreNote = tr("The last job's fault injection (%1) is not carried over: add it again to inject it.")
                          .arg(dropped.join(QStringLiteral(", ")));
    setConfig(remembered);
  }
}

QLabel* LaunchDialog::addRow(const QString& field, const QString& label, QWidget* editor) {
  const int row = m_grid->rowCount();
  if (!label.isEmpty()) {
    auto* title = new QLabel(label);
    m_grid->addWidget(title, row, 0);
    m_rows[field] << title;
  }
  m_grid->addWidget(editor, row, 1);
  m_rows[field] << editor;
  auto* error = new QLabel;
  error->setObjectName(QStringLiteral("error_") + field);
  error->setStyleSheet(QStringLiteral("color: #c0392b"));
  // A long reason (the CLI's own words) wraps in its column instead of widening the dialog.
  error->setWordWrap(true);
  error->setMaximumWidth(320);
  m_grid->addWidget(error, row, 2);
  m_errors[field] = error;
  m_rows[field] << error;
  return error;
}

void LaunchDialog::showRowsOfKind() {
  static const QStringList shared = {QStringLiteral("job"), QStringLiteral("world_size"), QStringLiteral("hostfile")};
  static const QStringList script = {QStringLiteral("script"), QStringLiteral("script_arguments"),
                                     QStringLiteral("python")};
  const bool torch = m_job->currentData().toString() == QLatin1String("torch");
  for (auto it = m_rows.begin(); it != m_rows.end(); ++it) {
    const bool shown = shared.contains(it.key()) || script.contains(it.key()) == torch;
    for (QWidget* w : it.value())
      w->setVisible(shown);
  }
  adjustSize();
}

bool LaunchDialog::rowShown(const QString& field) const {
  const auto it = m_rows.find(field);
  return it != m_rows.end() && !it.value().isEmpty() && !it.value().first()->isHidden();
}

LaunchConfig LaunchDialog::config() const {
  LaunchConfig c;
  c.job = m_job->currentData().toString();
  c.script = m_script->text().trimmed();
  c.python = m_python->text().trimmed();
  c.scriptArguments = m_scriptArguments->text().trimmed();
  c.model = m_model->currentText();
  c.worldSize = m_worldSize->value();
  c.hostfile = m_hostfile->text().trimmed();
  c.backend = m_backend->currentText();
  c.iterations = m_iterations->value();
  c.batch = m_batch->value();
  c.width = m_width->value();
  c.depth = m_depth->value();
  c.bucketCapMb = m_bucketCap->value();
  c.firstBucketCapMb = m_firstBucketCap->value();
  c.findUnusedParameters = m_findUnused->isChecked();
  c.gradientAsBucketView = m_bucketView->isChecked();
  c.staticGraph = m_staticGraph->isChecked();
  c.fusedOptimizer = m_fusedOptimizer->isChecked();
  c.zero = m_zero->isChecked();
  c.zeroOverlap = m_zeroOverlap->isChecked();
  c.batchNorm = m_batchNorm->isChecked();
  c.syncBn = m_syncBn->isChecked();
  c.commHook = m_commHook->currentText();
  c.probes = m_probes->isChecked();
  c.extraArguments = m_extra->text().trimmed();
  return c;
}

void LaunchDialog::setConfig(const LaunchConfig& c) {
  // A value the combo does not offer shows as its error, not silently as another.
  auto choose = [](QComboBox* box, const QString& value) {
    if (box->findText(value) < 0) box->addItem(value);
    box->setCurrentText(value);
  };
  const int kind = m_job->findData(c.job);
  if (kind < 0) m_job->addItem(c.job, c.job);  // shown as its error
  m_job->setCurrentIndex(m_job->findData(c.job));
  m_script->setText(c.script);
  m_python->setText(c.python);
  m_scriptArguments->setText(c.scriptArguments);
  showRowsOfKind();
  choose(m_model, c.model);
  m_worldSize->setValue(c.worldSize);
  m_hostfile->setText(c.hostfile);
  choose(m_backend, c.backend);
  m_iterations->setValue(c.iterations);
  m_batch->setValue(c.batch);
  m_width->setValue(c.width);
  m_depth->setValue(c.depth);
  m_bucketCap->setValue(c.bucketCapMb);
  m_firstBucketCap->setValue(c.firstBucketCapMb);
  m_findUnused->setChecked(c.findUnusedParameters);
  m_bucketView->setChecked(c.gradientAsBucketView);
  m_staticGraph->setChecked(c.staticGraph);
  m_fusedOptimizer->setChecked(c.fusedOptimizer);
  m_zero->setChecked(c.zero);
  m_zeroOverlap->setChecked(c.zeroOverlap);
  m_batchNorm->setChecked(c.batchNorm);
  m_syncBn->setChecked(c.syncBn);
  choose(m_commHook, c.commHook);
  m_probes->setChecked(c.probes);
  m_extra->setText(c.extraArguments);
  revalidate();
}

QString LaunchDialog::errorText(const QString& field) const {
  const auto it = m_errors.find(field);
  return it == m_errors.end() ? QString() : (*it)->text();
}

bool LaunchDialog::canLaunch() const { return validate(config()).isEmpty(); }

void LaunchDialog::revalidate() {
  const auto problems = validate(config());
  for (auto it = m_errors.begin(); it != m_errors.end(); ++it)
    it.value()->setText(problems.value(it.key()));
  for (QAbstractButton* b : m_buttons->buttons()) {
    if (m_buttons->buttonRole(b) == QDialogButtonBox::AcceptRole) b->setEnabled(problems.isEmpty());
  }
  if (!problems.isEmpty()) {
    m_status->setText(tr("Fix the fields marked in red to launch."));
  } else if (m_job->currentData().toString() == QLatin1String("torch")) {
    m_status->setText(
        tr("The script runs unchanged with torchrun's environment; ddpscope.log(loss=...) "
           "in it adds the loss to the charts."));
  } else if (!m_probes->isChecked()) {
    m_status->setText(tr("Without probes the job records nothing: only its progress is shown."));
  } else {
    m_status->setText(m_restoreNote);
  }
}

bool LaunchDialog::savePresetTo(const QString& path) {
  QString error;
  const bool ok = savePreset(config(), path, &error);
  m_status->setText(ok ? tr("Saved the preset to %1").arg(path) : error);
  return ok;
}

bool LaunchDialog::loadPresetFrom(const QString& path) {
  LaunchConfig c;
  QString error;
  if (!loadPreset(path, &c, &error)) {
    m_status->setText(error);
    return false;
  }
  setConfig(c);
  if (validate(c).isEmpty()) m_status->setText(tr("Loaded %1").arg(path));
  return true;
}

}  // namespace ddpscope::gui
