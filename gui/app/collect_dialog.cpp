#include "collect_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QNetworkInterface>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ddpscope::gui {
namespace {

// This machine's addresses other hosts may reach (IPv4, up, not loopback).
QStringList externalAddresses() {
  QStringList out;
  for (const QNetworkInterface& i : QNetworkInterface::allInterfaces()) {
    if (!(i.flags() & QNetworkInterface::IsUp) || (i.flags() & QNetworkInterface::IsLoopBack)) continue;
    for (const QNetworkAddressEntry& e : i.addressEntries())
      if (e.ip().protocol() == QAbstractSocket::IPv4Protocol) out << e.ip().toString();
  }
  return out;
}

}  // namespace

CollectDialog::CollectDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Collect from a job"));
  setObjectName(QStringLiteral("collectDialog"));
  auto* intro =
      new QLabel(tr("Follow a PyTorch job that another launcher starts (torchrun on each node, srun, "
                    "mpirun, a wrapper of your own). The job runs unchanged: it needs only a few "
                    "variables in its environment, shown here once the collector listens."));
  intro->setWordWrap(true);
  m_host = new QComboBox;
  m_host->addItem(tr("127.0.0.1 (ranks on this machine only)"), QStringLiteral("127.0.0.1"));
  for (const QString& a : externalAddresses())
    m_host->addItem(tr("%1 (ranks on other hosts too)").arg(a), a);
  m_host->setToolTip(tr("The address the job's ranks send to: one of this machine's that their hosts reach"));
  m_port = new QSpinBox;
  m_port->setRange(0, 65534);
  m_port->setSpecialValueText(tr("any free port"));
  m_port->setToolTip(tr("The collector uses this port and the next; open both in a firewall between the hosts"));
  m_expect = new QSpinBox;
  m_expect->setRange(0, 1 << 20);
  m_expect->setSpecialValueText(tr("until stopped"));
  m_expect->setToolTip(tr("Stop once this many ranks have ended (torchrun's restarts are waited through)"));
  auto* form = new QFormLayout;
  form->addRow(tr("Listen on"), m_host);
  form->addRow(tr("Port"), m_port);
  form->addRow(tr("Ranks to wait for"), m_expect);
  m_start = new QPushButton(tr("Start collecting"));
  m_start->setDefault(true);
  m_stop = new QPushButton(tr("Stop"));
  m_stop->setEnabled(false);
  m_stop->setToolTip(tr("End the collection: what the ranks sent is stored and the run file is complete"));
  m_lines = new QPlainTextEdit;
  m_lines->setReadOnly(true);
  m_lines->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  m_lines->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_lines->setPlaceholderText(tr("The lines for the job's shell appear here once the collector listens."));
  m_lines->setMinimumHeight(150);
  m_copyExports = new QPushButton(tr("Copy export lines"));
  m_copyPrefix = new QPushButton(tr("Copy launcher prefix"));
  m_copyExports->setEnabled(false);
  m_copyPrefix->setEnabled(false);
  m_table = new QTableWidget(0, 6);
  m_table->setHorizontalHeaderLabels(
      {tr("Rank"), tr("Host"), tr("Local rank"), tr("Node"), tr("Attempt"), tr("State")});
  m_table->verticalHeader()->hide();
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_status = new QLabel(tr("Not collecting."));
  m_status->setWordWrap(true);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_start);
  buttons->addWidget(m_stop);
  buttons->addStretch();
  auto* copies = new QHBoxLayout;
  copies->addWidget(m_copyExports);
  copies->addWidget(m_copyPrefix);
  copies->addStretch();
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(m_lines);
  layout->addLayout(copies);
  layout->addWidget(m_table, 1);
  layout->addWidget(m_status);
  resize(720, 500);

  connectButtons();
}

void CollectDialog::connectButtons() {
  connect(m_start, &QPushButton::clicked, this, [this] {
    m_start->setEnabled(false);
    m_collecting = true;
    m_status->setText(tr("Starting the collector..."));
    emit startRequested(listen(), expectedRanks());
  });
  connect(m_stop, &QPushButton::clicked, this, [this] {
    m_stop->setEnabled(false);
    m_status->setText(tr("Stopping: storing what the ranks still send..."));
    emit stopRequested();
  });
  connect(m_copyExports, &QPushButton::clicked, this, [this] { copy(m_exports.join('\n'), tr("export lines")); });
  connect(m_copyPrefix, &QPushButton::clicked, this, [this] { copy(m_prefix, tr("launcher prefix")); });
}

QString CollectDialog::listen() const {
  const QString host = m_host->currentData().toString();
  return m_port->value() > 0 ? QStringLiteral("%1:%2").arg(host).arg(m_port->value()) : host;
}

int CollectDialog::expectedRanks() const { return m_expect->value(); }

void CollectDialog::showInstructions(const QStringList& exports, const QString& prefix) {
  m_exports = exports;
  m_prefix = prefix;
  m_lines->setPlainText(tr("# In the shell that starts the job:\n%1\n\n# Or before the launcher's command "
                           "(torchrun, srun, mpirun):\n%2 torchrun ...")
                            .arg(exports.join('\n'), prefix));
  m_copyExports->setEnabled(true);
  m_copyPrefix->setEnabled(true);
  m_stop->setEnabled(true);
  for (QWidget* w : std::initializer_list<QWidget*>{m_host, m_port, m_expect})
    w->setEnabled(false);
  setCounts(0, 0);
}

void CollectDialog::setCounts(int joined, int ended) {
  const int expect = m_expect->value();
  QString text = tr("Collecting: %1 joined, %2 ended").arg(joined).arg(ended);
  text += expect > 0 ? tr(" (stops when %1 have ended).").arg(expect) : tr(" (Stop when the job is done).");
  m_status->setText(text);
}

void CollectDialog::setRanks(const std::vector<JobRankRow>& ranks) {
  m_table->setRowCount(static_cast<int>(ranks.size()));
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    const JobRankRow& r = ranks[static_cast<size_t>(i)];
    const auto number = [](int v) { return v < 0 ? QStringLiteral("-") : QString::number(v); };
    const QStringList cells = {
        QString::number(r.rank), r.host.isEmpty() ? QStringLiteral("-") : r.host,  number(r.localRank),
        number(r.node),          r.attempt > 0 ? QString::number(r.attempt) : "-", r.state};
    for (int c = 0; c < cells.size(); ++c)
      m_table->setItem(i, c, new QTableWidgetItem(cells[c]));
  }
  m_table->resizeColumnsToContents();
}

void CollectDialog::setEnded(const QString& message) {
  m_collecting = false;
  m_stop->setEnabled(false);
  m_start->setEnabled(false);  // a new collection is a new dialog: this one keeps its run's lines
  m_status->setText(message.isEmpty() ? tr("The collection ended; the run file is complete.")
                                      : tr("The collection ended: %1").arg(message));
}

void CollectDialog::showError(const QString& message) {
  m_collecting = false;
  m_start->setEnabled(true);
  m_status->setText(tr("Cannot collect: %1").arg(message));
}

void CollectDialog::copy(const QString& text, const QString& what) {
  QApplication::clipboard()->setText(text);
  m_status->setText(tr("Copied the %1.").arg(what));
}

}  // namespace ddpscope::gui
