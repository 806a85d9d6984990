// The processes a test started, told apart from those of tests running beside it: the
// first call of test_tag() puts a tag in this process's environment, every process it
// starts inherits it (mpirun hands it on to the ranks), and own_processes() finds them
// by it in /proc.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QList>
#include <QRandomGenerator>

#include <unistd.h>

namespace ddpscope_tests {

inline constexpr const char* kTestTagVariable = "DDPSCOPE_TEST_TAG";

// This test's tag, set in its environment on the first call.
inline const QByteArray& test_tag() {
  static const QByteArray tag = [] {
    QByteArray t =
        QByteArray::number(::getpid()) + "-" + QByteArray::number(QRandomGenerator::global()->generate64(), 36);
    qputenv(kTestTagVariable, t);
    return t;
  }();
  return tag;
}

// The environments of the live processes named `comm` (as /proc/PID/comm has it, 15
// characters at most) that carry this test's tag, one list of VAR=value entries each;
// zombies are dead already (a container's init may never reap them).
inline QList<QList<QByteArray>> own_process_environments(const QByteArray& comm) {
  const QByteArray needle = QByteArray(kTestTagVariable) + "=" + test_tag();
  QList<QList<QByteArray>> found;
  for (const QString& pid : QDir("/proc").entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    QFile name("/proc/" + pid + "/comm"), stat("/proc/" + pid + "/stat"), env("/proc/" + pid + "/environ");
    if (!name.open(QIODevice::ReadOnly) || name.readAll().trimmed() != comm) continue;
    if (!stat.open(QIODevice::ReadOnly) || !env.open(QIODevice::ReadOnly)) continue;
    const QByteArray fields = stat.readAll();
    const QByteArray state = fields.mid(fields.lastIndexOf(')') + 2, 1);  // after "pid (comm) "
    const QList<QByteArray> entries = env.readAll().split('\0');
    if (state != "Z" && entries.contains(needle)) found << entries;
  }
  return found;
}

// How many live processes named `comm` carry this test's tag.
inline int own_processes(const QByteArray& comm) { return static_cast<int>(own_process_environments(comm).size()); }

}  // namespace ddpscope_tests
