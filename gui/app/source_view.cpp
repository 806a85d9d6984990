#include "source_view.h"

#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTextBlock>
#include <QVBoxLayout>

namespace ddpscope::gui {

SourceView::SourceView(QWidget* parent) : QDialog(parent) {
  auto* layout = new QVBoxLayout(this);
  m_where = new QLabel;
  m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_text = new QPlainTextEdit;
  m_text->setReadOnly(true);
  m_text->setLineWrapMode(QPlainTextEdit::NoWrap);
  m_text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  layout->addWidget(m_where);
  layout->addWidget(m_text, 1);
  resize(900, 600);
}

QString SourceView::whyNotReadable(const QString& file) {
  const QFileInfo info(file);
  if (file.isEmpty() || !info.exists())
    return tr("%1 is not on this machine (the rank may have run on another host, or in another folder)").arg(file);
  if (!info.isFile()) return tr("%1 is not a regular file").arg(file);
  if (!info.isReadable()) return tr("%1 cannot be read (permissions)").arg(file);
  if (info.size() > kMaxBytes) return tr("%1 is larger than 8 MiB: not shown").arg(file);
  return {};
}

bool SourceView::showFile(const QString& file, int line) {
  m_problem = whyNotReadable(file);
  QFile f(file);
  if (m_problem.isEmpty() && !f.open(QIODevice::ReadOnly)) m_problem = tr("%1 cannot be opened").arg(file);
  if (!m_problem.isEmpty()) return false;
  // Read at most the limit: the file may have grown since it was looked at.
  const QByteArray bytes = f.read(kMaxBytes + 1);
  if (bytes.size() > kMaxBytes) {
    m_problem = tr("%1 is larger than 8 MiB: not shown").arg(file);
    return false;
  }
  if (bytes.left(8192).contains('\0')) {
    m_problem = tr("%1 is not a text file").arg(file);
    return false;
  }
  m_text->setPlainText(QString::fromUtf8(bytes));
  const int count = m_text->document()->blockCount();
  const int at = std::clamp(line, 1, std::max(count, 1));
  setWindowTitle(tr("%1:%2").arg(QFileInfo(file).fileName()).arg(line));
  m_where->setText(line > count
                       ? tr("%1, line %2 (the file has %3 lines now: it changed since)").arg(file).arg(line).arg(count)
                       : tr("%1, line %2").arg(file).arg(line));
  QTextCursor cursor(m_text->document()->findBlockByNumber(at - 1));
  m_text->setTextCursor(cursor);
  QTextEdit::ExtraSelection mark;
  mark.cursor = cursor;
  mark.format.setBackground(QColor(0xff, 0xec, 0xb3));
  mark.format.setProperty(QTextFormat::FullWidthSelection, true);
  m_text->setExtraSelections({mark});
  m_text->centerCursor();
  return true;
}

int SourceView::currentLine() const { return m_text->textCursor().blockNumber() + 1; }

}  // namespace ddpscope::gui
