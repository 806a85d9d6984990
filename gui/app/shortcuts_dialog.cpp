#include "shortcuts_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ddpscope::gui {

const std::vector<Shortcut>& keyboardShortcuts() {
  static const std::vector<Shortcut> keys = {
      {"W  or  +", "Zoom in around the centre", "Timeline"},
      {"S  or  −", "Zoom out", "Timeline"},
      {"A  or  ←", "Pan left (a fifth of the view)", "Timeline"},
      {"D  or  →", "Pan right", "Timeline"},
      {"Mouse wheel", "Zoom around the cursor", "Timeline"},
      {"Drag", "Select a time range: its time by name and kind in the Range panel", "Timeline"},
      {"Shift+drag  or  middle drag", "Pan", "Timeline"},
      {"Click", "Select a span or mark: its details in the Details panel (empty space clears)", "Timeline"},
      {"Click a rank's header", "Collapse or expand the rank's tracks", "Timeline"},
      {"F", "Fit the whole run", "Timeline"},
      {"N / P", "Next / previous iteration", "Timeline"},
      {"Esc", "Clear the selection and the range", "Timeline"},
      {"Ctrl+F  or  /", "Find spans, marks, 'bucket N' or a parameter", "Timeline"},
      {"Enter / Shift+Enter", "Next / previous match", "Find bar"},
      {"Click a header", "Sort the table by that column (again: reverse)", "Every table"},
      {"Ctrl+1 … Ctrl+0", "Show tab 1 … 10", "Window"},
      {"Ctrl+O", "Open a run file", "Window"},
      {"Ctrl+L", "Launch a job", "Window"},
      {"F5", "Refresh the run list", "Window"},
      {"Ctrl+B", "Show or hide the run list", "Window"},
      {"Ctrl+Shift+C", "Copy a link to the lesson's step (opens the same step elsewhere)", "Learn"},
      {"Ctrl+Q", "Quit", "Window"},
  };
  return keys;
}

ShortcutsDialog::ShortcutsDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Keyboard shortcuts"));
  auto* layout = new QVBoxLayout(this);
  const auto& keys = keyboardShortcuts();
  m_table = new QTableWidget(static_cast<int>(keys.size()), 3);
  m_table->setHorizontalHeaderLabels({tr("Keys"), tr("Does"), tr("Where")});
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    m_table->setItem(r, 0, new QTableWidgetItem(keys[static_cast<size_t>(r)].keys));
    m_table->setItem(r, 1, new QTableWidgetItem(keys[static_cast<size_t>(r)].action));
    m_table->setItem(r, 2, new QTableWidgetItem(keys[static_cast<size_t>(r)].where));
  }
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  m_table->setSortingEnabled(true);
  m_table->resizeColumnsToContents();
  m_table->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(m_table);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(720, 560);
}

}  // namespace ddpscope::gui
