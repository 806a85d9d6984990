// Help ▸ Keyboard shortcuts: every key the app answers to, where, and what it does
// (Perfetto's timeline conventions: W/S zoom, A/D pan).
#pragma once

#include <QDialog>
#include <QString>
#include <vector>

class QTableWidget;

namespace ddpscope::gui {

struct Shortcut {
  QString keys, action, where;
};
const std::vector<Shortcut>& keyboardShortcuts();

class ShortcutsDialog : public QDialog {
  Q_OBJECT

 public:
  explicit ShortcutsDialog(QWidget* parent = nullptr);
  QTableWidget* table() const { return m_table; }

 private:
  QTableWidget* m_table = nullptr;
};

}  // namespace ddpscope::gui
