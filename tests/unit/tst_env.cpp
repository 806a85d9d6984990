// Numeric settings in the environment, read one way: defaults and ranges, and a malformed
// one refused before any rank starts, naming the variable and its value.
#include <QtTest/QtTest>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestEnv : public LauncherTest {
  Q_OBJECT

 private slots:

  // Numeric settings in the environment are read one way: a malformed one is refused
  // before any rank starts, naming the variable and its value (atoll read "5s" as 5 ms).
  void testMalformedEnvironmentSettingIsRefused_data() {
    QTest::addColumn<QString>("var");
    QTest::addColumn<QString>("value");
    QTest::newRow("start timeout with a unit") << "DDPSCOPE_START_TIMEOUT_MS"
                                               << "5s";
    QTest::newRow("end timeout of zero") << "DDPSCOPE_END_TIMEOUT_MS"
                                         << "0";
    QTest::newRow("negative end grace") << "DDPSCOPE_MPIRUN_END_GRACE_MS"
                                        << "-1";
    QTest::newRow("collective timeout in words") << "DDPSCOPE_PG_TIMEOUT_MS"
                                                 << "ten";
    QTest::newRow("ring switch out of range") << "DDPSCOPE_MPI_RING"
                                              << "2";
  }

  void testMalformedEnvironmentSettingIsRefused() {
    QFETCH(QString, var);
    QFETCH(QString, value);
    QTemporaryDir dir;
    const QString out = dir.filePath("never.ddprun");
    Result r = run({"train", "--np", "2", "--iters", "2", "--batch", "8", "--out", out}, {{var, value}});
    QVERIFY(r.code != 0);
    QVERIFY2((r.out + r.err).contains(var + "='" + value + "' is not a whole number"), qPrintable(r.out + r.err));
    QCOMPARE(workers_running(), 0);
  }

  void testEnvironmentSettingsDefaultsAndRange() {
    qunsetenv("DDPSCOPE_TEST_SETTING");
    QCOMPARE(ddpscope::env_int("DDPSCOPE_TEST_SETTING", 42), int64_t{42});
    qputenv("DDPSCOPE_TEST_SETTING", "");
    QCOMPARE(ddpscope::env_int("DDPSCOPE_TEST_SETTING", 42), int64_t{42});
    qputenv("DDPSCOPE_TEST_SETTING", "250");
    QCOMPARE(ddpscope::env_int("DDPSCOPE_TEST_SETTING", 42, 1, 1000), int64_t{250});
    for (const char* bad : {"2500", "0", "25x", " ", "99999999999999999999"}) {
      qputenv("DDPSCOPE_TEST_SETTING", bad);
      QVERIFY_THROWS_EXCEPTION(ddpscope::Error, ddpscope::env_int("DDPSCOPE_TEST_SETTING", 42, 1, 1000));
    }
    qunsetenv("DDPSCOPE_TEST_SETTING");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestEnv)
#include "tst_env.moc"
