// StackPanel: one rank's latest stack beside the Hang tab's table. Its threads,
// the training thread first and open, each with its frames innermost first: function,
// file:line and the source line. The libraries' frames (torch, the C library, the engine's
// machinery) are hidden until "Libraries' frames" is ticked; a frame whose file is readable
// here opens it at its line (double-click or Enter); "Copy as text" copies the stack as
// `ddpscope-cli hang --all-frames` lists it.
#pragma once

#include <QWidget>
#include <optional>

#include "run_store_reader.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace ddpscope::gui {

class StackPanel : public QWidget {
  Q_OBJECT

 public:
  explicit StackPanel(QWidget* parent = nullptr);

  // The capture to show (none: says which rank has no stack); run_start_ns: the run's start,
  // for "12.3 s into the run" (0: not known).
  void setStack(int rank, const std::optional<probes::StackCapture>& capture, qint64 run_start_ns);
  QTreeWidget* tree() const { return m_tree; }
  QCheckBox* librariesBox() const { return m_libraries; }
  QPushButton* copyButton() const { return m_copy; }
  QString title() const;
  // The stack as text, every frame (what "Copy as text" copies).
  QString stackText() const;

 signals:
  // A frame was opened: its file and line, when the file is readable here.
  void sourceOpened(const QString& file, int line);

 private:
  void fill();
  void openFrame(QTreeWidgetItem* item);

  QLabel* m_title;
  QCheckBox* m_libraries;
  QPushButton* m_copy;
  QTreeWidget* m_tree;
  std::optional<probes::StackCapture> m_capture;
  qint64 m_runStartNs = 0;
};

}  // namespace ddpscope::gui
