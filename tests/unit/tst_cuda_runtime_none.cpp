// The CUDA facade of a build without CUDA (cuda_runtime_none.cpp, compiled into this test
// alone whatever the build): no device and no error when asked how many, and every call
// that needs a GPU refused with what to do, never a crash.
#include <QtTest/QtTest>

#include "ddpscope/error.h"
#include "tensor/cuda_runtime_facade.h"

using namespace ddpscope;

class TestCudaRuntimeNone : public QObject {
  Q_OBJECT

 private slots:
  void testNoDeviceAndNoError() {
    QVERIFY(!cuda::available());
    QCOMPARE(cuda::device_count(), 0);
    cuda::device_free(nullptr, 0);  // harmless
  }

  void testWorkIsRefusedWithWhatToDo() {
    char host[8] = {};
    const std::vector<std::function<void()>> calls = {
        [] { cuda::device_malloc(64, 0); }, [&] { cuda::copy_host_to_device(host, host, 8, 0); },
        [&] { cuda::copy_device_to_host(host, host, 8, 0); }, [&] { cuda::copy_device_to_device(host, host, 8, 0); },
        [] { cuda::synchronize(0); }};
    for (const auto& call : calls) {
      try {
        call();
        QFAIL("a GPU call without CUDA returned");
      } catch (const Error& e) {
        QVERIFY2(
            QString(e.what()).contains("built without CUDA") && QString(e.what()).contains("-DDDPSCOPE_WITH_CUDA=ON"),
            e.what());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestCudaRuntimeNone)
#include "tst_cuda_runtime_none.moc"
