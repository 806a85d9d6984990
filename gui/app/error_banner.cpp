#include "error_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace ddpscope::gui {

ErrorBanner::ErrorBanner(QWidget* parent)
    : QWidget(parent),
      m_text(new QLabel(this)),
      m_saveCopy(new QPushButton(tr("Save a copy..."), this)),
      m_reload(new QPushButton(tr("Reload"), this)),
      m_close(new QPushButton(tr("Close"), this)) {
  m_text->setObjectName(QStringLiteral("errorBanner"));  // names: MainWindow::part
  m_reload->setObjectName(QStringLiteral("reloadRun"));
  m_text->setWordWrap(true);
  m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_text->setStyleSheet(QStringLiteral("background: #fdecea; color: #8b1a10; padding: 6px; border: 1px solid #e0b4b0"));
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(m_text, 1);
  row->addWidget(m_saveCopy, 0, Qt::AlignTop);
  row->addWidget(m_reload, 0, Qt::AlignTop);
  row->addWidget(m_close, 0, Qt::AlignTop);
  connect(m_close, &QPushButton::clicked, this, &ErrorBanner::clear);
  connect(m_reload, &QPushButton::clicked, this, &ErrorBanner::reloadRequested);
  connect(m_saveCopy, &QPushButton::clicked, this, &ErrorBanner::saveCopyRequested);
  clear();
}

void ErrorBanner::showMessage(const QString& message, bool reload, bool saveCopy) {
  m_text->setText(message);
  m_text->show();
  m_close->show();
  m_reload->setVisible(reload);
  m_saveCopy->setVisible(saveCopy);
  show();
}

void ErrorBanner::clear() {
  for (QWidget* part : {static_cast<QWidget*>(m_text), static_cast<QWidget*>(m_saveCopy),
                        static_cast<QWidget*>(m_reload), static_cast<QWidget*>(m_close)})
    part->hide();
  hide();  // takes no room above the tabs, not even the layout's spacing
}

}  // namespace ddpscope::gui
