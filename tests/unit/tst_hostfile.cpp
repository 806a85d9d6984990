// OpenMPI hostfiles read before a job starts: hosts with and without slots, comments and
// blank lines skipped, the slots added up only when every line gives them, and a bad
// line named with its file, number and what is wrong. (Built with QT_NO_KEYWORDS: a
// hostfile line's `slots` is also Qt's keyword.)
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <fstream>

#include "apps/hostfile.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::apps;

class TestHostfile : public QObject {
  Q_OBJECT
  QTemporaryDir m_dir;

  std::string write(const char* name, const std::string& text) {
    const std::string path = m_dir.filePath(name).toStdString();
    std::ofstream(path) << text;
    return path;
  }

  QString refusal(const std::string& path) {
    try {
      read_hostfile(path);
    } catch (const Error& e) {
      return QString::fromStdString(user_message(e));
    }
    return QString();
  }

 private Q_SLOTS:
  void testHostsSlotsAndComments() {
    const Hostfile h =
        read_hostfile(write("good", "# the cluster\nnode1 slots=4\n\n  node2 slots=2 max_slots=8  # big\n"));
    QCOMPARE(h.hosts.size(), size_t{2});
    QCOMPARE(h.hosts[0].host, std::string("node1"));
    QCOMPARE(h.hosts[0].slots, 4);
    QCOMPARE(h.hosts[1].host, std::string("node2"));
    QCOMPARE(h.hosts[1].slots, 2);
    QCOMPARE(h.total_slots(), 6);
    const Hostfile open = read_hostfile(write("open", "node1 slots=4\nnode2\n"));
    QCOMPARE(open.hosts[1].slots, -1);
    QCOMPARE(open.total_slots(), -1);  // mpirun counts node2's cores: nobody knows the sum
  }

  void testABadLineIsNamed() {
    const QString why = refusal(write("bad", "node1 slots=4\nnode2 slots=many\n"));
    QVERIFY2(why.contains("bad") && why.contains("line 2"), qPrintable(why));
    QVERIFY(!refusal(write("zero", "node1 slots=0\n")).isEmpty());
    QVERIFY(!refusal(write("word", "node1 cores=4\n")).isEmpty());
    QVERIFY2(refusal(write("dash", "-np 4\n")).contains("never a leading"), "an option is no host");
    QVERIFY2(refusal(m_dir.filePath("missing").toStdString()).contains("missing"),
             qPrintable(refusal(m_dir.filePath("missing").toStdString())));
  }

  void testAFileWithoutHostsIsRefused() { QVERIFY(!refusal(write("empty", "# nothing here\n\n")).isEmpty()); }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestHostfile)
#include "tst_hostfile.moc"
