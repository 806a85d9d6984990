// cuBLAS is opened when a GEMM first needs it, not at every program's start
// (engine/tensor/cublas_library.h): its initialisers cost each process 175 ms of CPU.
#include <QtTest/QtTest>

#include "tensor/cublas_library.h"
#include "test_registry.h"

using namespace ddpscope::cuda_kernels;

namespace {

// The libraries the dynamic loader looked up while `program args` ran (LD_DEBUG=libs).
QString librariesLoadedBy(const QString& program, const QStringList& args) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("LD_DEBUG", "libs");
  p.setProcessEnvironment(env);
  p.start(program, args);
  if (!p.waitForFinished(60000)) return "did not finish";
  return QString::fromLocal8Bit(p.readAllStandardError());
}

QString worker() { return QFileInfo(DDPSCOPE_CLI_PATH).dir().filePath("ddpscope-worker"); }

}  // namespace

class TestCublasLibrary : public QObject {
  Q_OBJECT

 private slots:
  void testAProgramStartsWithoutCublas() {
    // This test program links the engine, GEMM kernels and all.
    QVERIFY(!cublas_is_loaded());
  }

  void testTheCliAndTheRanksStartWithoutCublas_data() {
    QTest::addColumn<QString>("program");
    QTest::addColumn<QStringList>("args");
    QTest::newRow("ddpscope-cli --version") << QString(DDPSCOPE_CLI_PATH) << QStringList{"--version"};
    QTest::newRow("ddpscope-worker --help") << worker() << QStringList{"--help"};
  }
  void testTheCliAndTheRanksStartWithoutCublas() {
    QFETCH(QString, program);
    QFETCH(QStringList, args);
    const QString loaded = librariesLoadedBy(program, args);
    // The loader's trace is there (the CUDA runtime and NCCL are still linked: cheap)...
    QVERIFY2(loaded.contains("find library=libcudart.so"), qPrintable(loaded.left(2000)));
    // ...and cuBLAS is not in it.
    QVERIFY2(!loaded.contains("libcublas"), qPrintable(loaded.left(2000)));
  }

  // A machine without cuBLAS, or a library that is not it: the error names each place tried
  // and what to install, and nothing is left half loaded.
  void testAMissingOrWrongLibraryIsNamed() {
    try {
      load_cublas({"/nonexistent/libcublas.so.99", "libcublas_nowhere.so.99"});
      QFAIL("a missing cuBLAS loaded");
    } catch (const std::exception& e) {
      const QString what = e.what();
      QVERIFY2(what.contains("/nonexistent/libcublas.so.99: ") && what.contains("libcublas_nowhere.so.99: "), e.what());
      QVERIFY2(what.contains("install the CUDA toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH"), e.what());
    }
    try {
      load_cublas({"libz.so.1"});
      QFAIL("zlib passed for cuBLAS");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("cuBLAS (libz.so.1) has no cublasCreate_v2"), e.what());
    }
    QVERIFY(!cublas_is_loaded());
  }

  void testTheFirstUseLoadsIt() {
    const CublasLibrary& lib = cublas_library();
    QVERIFY(lib.create != nullptr);
    QVERIFY(lib.sgemm != nullptr);
    QVERIFY(lib.dgemm != nullptr);
    QVERIFY(cublas_is_loaded());
    QCOMPARE(&cublas_library(), &lib);  // once
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCublasLibrary)
#include "tst_cublas_library.moc"
