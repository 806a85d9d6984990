// Splitter positions remembered per page: a split the user dragged is restored the next
// time the app starts (QSettings, under "layout/<page>/<n>"). Only the user's drags are
// saved (QSplitter::splitterMoved), so a page's own first placement applies until then.
#pragma once

#include <QSettings>
#include <QSplitter>
#include <QString>

namespace ddpscope::gui {

// Restores and then remembers every splitter inside `page` (in creation order).
inline void rememberSplitters(QWidget* page, const QString& pageId) {
  const QList<QSplitter*> splitters = page->findChildren<QSplitter*>();
  QList<QSplitter*> all = splitters;
  if (auto* self = qobject_cast<QSplitter*>(page)) all.prepend(self);
  for (int i = 0; i < all.size(); ++i) {
    QSplitter* splitter = all[i];
    const QString key = QStringLiteral("layout/%1/%2").arg(pageId).arg(i);
    const QByteArray saved = QSettings().value(key).toByteArray();
    if (!saved.isEmpty() && splitter->restoreState(saved)) splitter->setProperty("restored", true);
    QObject::connect(splitter, &QSplitter::splitterMoved, splitter,
                     [splitter, key] { QSettings().setValue(key, splitter->saveState()); });
  }
}

}  // namespace ddpscope::gui
