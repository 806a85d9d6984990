#pragma once
// Text the Learn page shows that is made outside its widgets (the lesson player, lesson
// requests): translated in the page's own context, so a translator finds it all together.
#include <QCoreApplication>
#include <QString>

namespace ddpscope::gui {

inline QString learnPageTr(const char* text) { return QCoreApplication::translate("LearnPage", text); }

}  // namespace ddpscope::gui
