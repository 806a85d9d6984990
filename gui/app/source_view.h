// SourceView: a source file shown read-only at one line, highlighted (a frame of a stack
// opened from the Hang tab). Large, binary or unreadable files are refused with a sentence
// saying why, never loaded whole.
#pragma once

#include <QDialog>

class QLabel;
class QPlainTextEdit;

namespace ddpscope::gui {

class SourceView : public QDialog {
  Q_OBJECT

 public:
  explicit SourceView(QWidget* parent = nullptr);

  // Shows `file` at `line` (1-based); false, with the reason in problem(), when it cannot.
  bool showFile(const QString& file, int line);
  QString problem() const { return m_problem; }
  QPlainTextEdit* text() const { return m_text; }
  int currentLine() const;

  // Whether `file` can be shown: a regular, readable file of at most kMaxBytes.
  static QString whyNotReadable(const QString& file);
  static constexpr qint64 kMaxBytes = 8 * 1024 * 1024;

 private:
  QLabel* m_where;
  QPlainTextEdit* m_text;
  QString m_problem;
};

}  // namespace ddpscope::gui
