// count_of for the GUI's QStrings: "1 student", "12 students".
#pragma once

#include <QString>

#include "ddpscope/plural.h"

namespace ddpscope::gui {

inline QString countOf(qint64 n, const QString& one, const QString& many = {}) {
  return QString::fromStdString(ddpscope::count_of(n, one.toStdString(), many.toStdString()));
}

}  // namespace ddpscope::gui
