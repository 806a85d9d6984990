// Storage: a block of host bytes aligned for any dtype, counted while it lives (and the
// peak kept), a version every in-place write bumps, and memory owned elsewhere adopted
// with its release run when the storage dies.
#include <QtTest/QtTest>

#include <cstdint>
#include <memory>

#include "tensor/storage.h"
#include "test_registry.h"

using namespace ddpscope;

class TestStorage : public QObject {
  Q_OBJECT

 private slots:
  void testHostBytesAreAlignedAndCounted() {
    const size_t before = Storage::cpu_bytes_in_use();
    Storage::reset_cpu_peak();
    {
      Storage s(1000, Device::cpu());
      QVERIFY(s.data() != nullptr);
      QCOMPARE(s.nbytes(), size_t{1000});
      QCOMPARE(reinterpret_cast<uintptr_t>(s.data()) % 64, uintptr_t{0});
      QCOMPARE(Storage::cpu_bytes_in_use(), before + 1000);
      QVERIFY(Storage::cpu_peak_bytes() >= before + 1000);
    }
    QCOMPARE(Storage::cpu_bytes_in_use(), before);
    QVERIFY(Storage::cpu_peak_bytes() >= before + 1000);  // the peak stays until reset
    Storage::reset_cpu_peak();
    QCOMPARE(Storage::cpu_peak_bytes(), before);
    Storage empty(0, Device::cpu());
    QCOMPARE(empty.nbytes(), size_t{0});
  }

  void testTheVersionCountsWrites() {
    Storage s(16, Device::cpu());
    QCOMPARE(s.version(), uint64_t{0});
    s.bump_version();
    s.bump_version();
    QCOMPARE(s.version(), uint64_t{2});
  }

  void testAdoptedMemoryIsReleasedByItsOwner() {
    auto buffer = std::make_unique<char[]>(256);
    int released = 0;
    {
      Storage s(buffer.get(), 256, [&] { ++released; });
      QCOMPARE(s.data(), static_cast<void*>(buffer.get()));
      QCOMPARE(s.nbytes(), size_t{256});
      QCOMPARE(released, 0);
    }
    QCOMPARE(released, 1);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestStorage)
#include "tst_storage.moc"
