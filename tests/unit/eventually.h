// Waiting in a test for something that finishes on another thread or process (an RRef
// delete acknowledged, a late reply counted): `pred` is checked every few milliseconds
// until it holds or `limit` has passed; the last check decides.
#pragma once

#include <chrono>
#include <thread>

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}
