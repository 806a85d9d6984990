// main() of a grouped test program: `PROGRAM tst_name [Qt Test arguments]` runs one
// registered test class, as its own program once did (test_registry.h).
#include <QtTest/QtTest>
#if defined(QT_WIDGETS_LIB)
#include <QApplication>
#endif
#if defined(QT_GUI_LIB)
#include <QGuiApplication>
#endif

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test_registry.h"

namespace ddpscope_tests {
namespace {

std::map<std::string, TestCase>& registry() {
  static std::map<std::string, TestCase> tests;
  return tests;
}

std::string base_name(const char* path) {
  std::string name = path;
  const size_t slash = name.find_last_of('/');
  if (slash != std::string::npos) name.erase(0, slash + 1);
  const size_t dot = name.find('.');
  if (dot != std::string::npos) name.erase(dot);
  return name;
}

std::unique_ptr<QCoreApplication> make_app(AppKind kind, int& argc, char** argv) {
#if defined(QT_WIDGETS_LIB)
  if (kind == AppKind::Widgets) return std::make_unique<QApplication>(argc, argv);
#endif
#if defined(QT_GUI_LIB)
  if (kind != AppKind::Core) return std::make_unique<QGuiApplication>(argc, argv);
#endif
  return std::make_unique<QCoreApplication>(argc, argv);
}

void print_tests(FILE* out) {
  for (const auto& [name, test] : registry())
    std::fprintf(out, "  %s\n", name.c_str());
}

}  // namespace

bool register_test(const char* source_file, TestCase test) {
  const std::string name = base_name(source_file);
  if (!registry().emplace(name, std::move(test)).second) {
    std::fprintf(stderr, "test program: two test files are named %s\n", name.c_str());
    std::abort();
  }
  return true;
}

}  // namespace ddpscope_tests

int main(int argc, char** argv) {
  using namespace ddpscope_tests;
  if (argc >= 2 && std::strcmp(argv[1], "--list") == 0) {
    print_tests(stdout);
    return 0;
  }
  // A program of one test (tst_ddpscope_probes) runs it without being told its name.
  const bool named = argc >= 2 && argv[1][0] != '-';
  if (!named && registry().size() != 1) {
    std::fprintf(stderr, "usage: %s TEST [Qt Test arguments]  (--list names the tests)\nits tests:\n", argv[0]);
    print_tests(stderr);
    return 2;
  }
  const auto found = named ? registry().find(argv[1]) : registry().begin();
  if (found == registry().end()) {
    std::fprintf(stderr, "%s: no test named '%s'; its tests are:\n", argv[0], argv[1]);
    print_tests(stderr);
    return 2;
  }
  const TestCase& test = found->second;
  // The program's own name, then the test's arguments, as a test program of its own had them.
  std::vector<char*> args{argv[0]};
  args.insert(args.end(), argv + (named ? 2 : 1), argv + argc);
  int args_count = static_cast<int>(args.size());
  QStringList extra;
  if (test.before_app) test.before_app(extra);
  const auto app = make_app(test.app, args_count, args.data());
  app->setAttribute(Qt::AA_Use96Dpi, true);
  const std::unique_ptr<QObject> object = test.make();
  QTest::setMainSourcePath(test.source);
  return QTest::qExec(object.get(), app->arguments() + extra);
}
