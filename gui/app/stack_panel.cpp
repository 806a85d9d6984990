#include "stack_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ddpscope/plural.h"
#include "hang_stacks.h"
#include "source_view.h"

namespace ddpscope::gui {
namespace {

constexpr int kFileRole = Qt::UserRole;
constexpr int kLineRole = Qt::UserRole + 1;
constexpr int kLibraryRole = Qt::UserRole + 2;

QString frameWhere(const probes::StackFrame& f) {
  const QString file = QString::fromStdString(f.file);
  return f.line > 0 ? QStringLiteral("%1:%2").arg(file).arg(f.line) : file;
}

// The column's text: the file's name and line, so that the line stays in view at 1024 px
// (the whole path is in the tooltip).
QString frameShort(const probes::StackFrame& f) {
  const QString name = QFileInfo(QString::fromStdString(f.file)).fileName();
  return f.line > 0 ? QStringLiteral("%1:%2").arg(name).arg(f.line) : name;
}

}  // namespace

StackPanel::StackPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  m_title = new QLabel(tr("Select a rank: its latest stack is shown here."));
  m_title->setWordWrap(true);
  m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_libraries = new QCheckBox(tr("Libraries' frames"));
  m_libraries->setToolTip(
      tr("Also list the frames of libraries (torch, Python's own, the C library, the engine's "
         "machinery): by default only the program's own code is listed"));
  m_copy = new QPushButton(tr("Copy as text"));
  m_copy->setToolTip(tr("Copy this stack, every thread and frame, as `ddpscope-cli hang --all-frames` lists it"));
  m_copy->setEnabled(false);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_libraries);
  buttons->addStretch(1);
  buttons->addWidget(m_copy);
  m_tree = new QTreeWidget;
  m_tree->setColumnCount(3);
  m_tree->setHeaderLabels({tr("Function"), tr("File:line"), tr("Code")});
  m_tree->header()->setSectionResizeMode(QHeaderView::Interactive);
  m_tree->setUniformRowHeights(true);
  layout->addWidget(m_title);
  layout->addLayout(buttons);
  layout->addWidget(m_tree, 1);
  connect(m_libraries, &QCheckBox::toggled, this, [this] { fill(); });
  connect(m_copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(stackText()); });
  connect(m_tree, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) { openFrame(item); });
}

void StackPanel::setStack(int rank, const std::optional<probes::StackCapture>& capture, qint64 run_start_ns) {
  m_capture = capture;
  m_runStartNs = run_start_ns;
  m_copy->setEnabled(capture.has_value());
  if (!capture) {
    m_title->setText(
        rank < 0 ? tr("Select a rank: its latest stack is shown here.")
                 : tr("Rank %1 sent no stack: it took none (no stall, no request), or could not answer.").arg(rank));
    m_tree->clear();
    return;
  }
  fill();
}

QString StackPanel::title() const { return m_title->text(); }

QString StackPanel::stackText() const {
  return m_capture ? QString::fromStdString(probes::stack_text(*m_capture, true, m_runStartNs)) : QString();
}

void StackPanel::fill() {
  m_tree->clear();
  if (!m_capture) return;
  const QString text = QString::fromStdString(probes::stack_text(*m_capture, false, m_runStartNs));
  m_title->setText(text.section('\n', 0, 0).chopped(1));  // "rank 1's stack, 3.0 s into the run (...)"
  const bool all = m_libraries->isChecked();
  for (size_t t = 0; t < m_capture->threads.size(); ++t) {
    const probes::ThreadStack& thread = m_capture->threads[t];
    auto* threadItem = new QTreeWidgetItem(
        m_tree, {thread.name.empty() ? tr("thread %1").arg(thread.tid) : QString::fromStdString(thread.name)});
    int hidden = 0;
    for (const probes::StackFrame& f : thread.frames) {
      const bool library = probes::is_library_frame(f, thread.native);
      if (library && !all) {
        ++hidden;
        continue;
      }
      auto* item = new QTreeWidgetItem(
          threadItem, {QString::fromStdString(f.name), frameShort(f), QString::fromStdString(f.code).trimmed()});
      item->setToolTip(1, frameWhere(f));
      item->setData(0, kFileRole, QString::fromStdString(f.file));
      item->setData(0, kLineRole, static_cast<int>(f.line));
      item->setData(0, kLibraryRole, library);
      if (library) item->setForeground(0, QColor(0x80, 0x80, 0x80));
      const QString why = f.line > 0 ? SourceView::whyNotReadable(QString::fromStdString(f.file)) : QString();
      item->setToolTip(0, f.line <= 0     ? tr("No line is known for this frame (no debug information)")
                          : why.isEmpty() ? tr("Double-click to open %1 at line %2").arg(frameWhere(f)).arg(f.line)
                                          : why);
    }
    if (!thread.answered)
      new QTreeWidgetItem(threadItem, {tr("(did not answer: the thread blocks the signal that asks for its stack)")});
    if (hidden > 0)
      new QTreeWidgetItem(
          threadItem,
          {tr("(%1 of libraries: tick \"Libraries' frames\")").arg(QString::fromStdString(count_of(hidden, "frame")))});
    if (thread.omitted > 0)
      new QTreeWidgetItem(
          threadItem, {tr("(%1 not recorded)").arg(QString::fromStdString(count_of(thread.omitted, "outer frame")))});
    threadItem->setExpanded(t == 0);  // the training thread
  }
  m_tree->resizeColumnToContents(0);
  m_tree->resizeColumnToContents(1);
}

void StackPanel::openFrame(QTreeWidgetItem* item) {
  const QString file = item->data(0, kFileRole).toString();
  const int line = item->data(0, kLineRole).toInt();
  if (file.isEmpty() || line <= 0) return;
  auto* view = new SourceView(this);
  view->setAttribute(Qt::WA_DeleteOnClose);
  if (!view->showFile(file, line)) {
    m_title->setToolTip(view->problem());
    item->setToolTip(0, view->problem());
    delete view;
    return;
  }
  view->show();
  emit sourceOpened(file, line);
}

}  // namespace ddpscope::gui
