// Colours for categories drawn side by side: the ranks of a chart, the ZeRO owners of a
// table. One colour per rank in every chart, so rank 1 is the same orange on the Live tab,
// the Overlap tab and the Buckets table.
//
// The colours are Okabe and Ito's palette ("Color Universal Design", 2008), chosen to stay
// apart in the common colour-vision deficiencies: no two of them are a red and a green that
// deuteranopia folds together. tst_category_palette checks every pair through a simulation.
#pragma once

#include <QColor>

namespace ddpscope::gui {

// Ranks 0..kDistinctRankColors-1 get colours of their own; later ranks repeat them.
inline constexpr int kDistinctRankColors = 7;

// A rank's line or fill colour.
QColor rankColor(int rank);

}  // namespace ddpscope::gui
