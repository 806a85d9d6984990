#include "category_palette.h"

#include <array>

namespace ddpscope::gui {

namespace {
// Okabe-Ito without its black (the text colour): rank 0 blue and rank 1 orange, the pair
// most runs show, sit furthest apart.
constexpr std::array<QRgb, kDistinctRankColors> kOkabeIto = {
    0x0072B2,  // blue
    0xE69F00,  // orange
    0x56B4E9,  // sky blue
    0xD55E00,  // vermillion
    0x009E73,  // bluish green
    0xCC79A7,  // reddish purple
    0xF0E442,  // yellow
};
}  // namespace

QColor rankColor(int rank) {
  const int i = ((rank % kDistinctRankColors) + kDistinctRankColors) % kDistinctRankColors;
  return QColor::fromRgb(kOkabeIto[static_cast<size_t>(i)]);
}

}  // namespace ddpscope::gui
