// The words of an error for the user: ddpscope's own errors without the source location
// they carry for developers ("[probes/store/sqlite_db.cpp:26]"), others as they are.
#pragma once

#include <QString>
#include <exception>

#include "ddpscope/error.h"

namespace ddpscope::gui {

inline QString userMessage(const std::exception& e) { return QString::fromStdString(ddpscope::user_message(e)); }

}  // namespace ddpscope::gui
