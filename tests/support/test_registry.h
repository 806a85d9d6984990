// Many Qt Test classes in one program. Each test file registers its class under the
// file's own name (tests/unit/tst_hostfile.cpp: "tst_hostfile") and the program runs the
// one named first on its command line (test_main.cpp). CTest still lists and runs each
// file as its own test, so a failure names it; grouping only spares the build from
// linking a program per file (docs/building.md has the figures).
#pragma once

#include <QtTest/QtTest>

#include <functional>
#include <memory>

namespace ddpscope_tests {

// The application object a test needs, as QTEST_MAIN would choose it from the libraries
// its file was built with.
enum class AppKind { Core, Gui, Widgets };

struct TestCase {
  AppKind app = AppKind::Core;
  std::function<std::unique_ptr<QObject>()> make;
  // Runs before the application object is made; may add Qt Test arguments (an MPI rank
  // other than 0 adds -silent).
  void (*before_app)(QStringList& extra_args) = nullptr;
  const char* source = "";
};

// Registers `test` under the base name of `source_file`; always returns true.
bool register_test(const char* source_file, TestCase test);

}  // namespace ddpscope_tests

#if defined(QT_WIDGETS_LIB)
#define DDPSCOPE_TEST_FULL_APP ::ddpscope_tests::AppKind::Widgets
#elif defined(QT_GUI_LIB)
#define DDPSCOPE_TEST_FULL_APP ::ddpscope_tests::AppKind::Gui
#else
#define DDPSCOPE_TEST_FULL_APP ::ddpscope_tests::AppKind::Core
#endif

#define DDPSCOPE_REGISTER_TEST(TestClass, kind, before)                                     \
  static const bool ddpscope_test_registered_##TestClass = ::ddpscope_tests::register_test( \
      __FILE__, {kind, [] { return std::unique_ptr<QObject>(new TestClass); }, before, __FILE__});

// In place of QTEST_MAIN: the richest application the file's libraries allow.
#define DDPSCOPE_TEST_MAIN(TestClass) DDPSCOPE_REGISTER_TEST(TestClass, DDPSCOPE_TEST_FULL_APP, nullptr)
// In place of QTEST_GUILESS_MAIN: a QCoreApplication.
#define DDPSCOPE_TEST_GUILESS_MAIN(TestClass) \
  DDPSCOPE_REGISTER_TEST(TestClass, ::ddpscope_tests::AppKind::Core, nullptr)
