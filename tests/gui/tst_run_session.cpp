// The run session and the tabs without a window: pages subscribe to the session through
// the tabs and get each run, the page on screen at once and the others when next shown; a
// failed open keeps the run; a followed file's stall reaches the Hang page.
#include <QtTest/QtTest>

#include <QSignalSpy>
#include <QTemporaryDir>
#include <set>

#include "empty_state.h"
#include "gui_test_runs.h"
#include "messages_page.h"
#include "run_session.h"
#include "run_tabs.h"
#include "test_registry.h"
#include "timeline_page.h"
#include "timeline_view.h"

using namespace ddpscope::gui;

namespace {

// A page that records what it was given, and which run the session held when it was told
// to let go of its run.
class RecordingPage : public QWidget, public RunPage {
 public:
  explicit RecordingPage(const RunSession* session) : m_session(session) {}
  void showRun(const ShownRun& shown) override {
    runs.push_back(shown);
    log << "show " + QFileInfo(QString::fromStdString(shown.run->path)).fileName();
  }
  void releaseRun(bool sameRun) override {
    const auto& open = m_session->run();
    log << QString("release %1 while %2 is open")
               .arg(sameRun)
               .arg(open ? QFileInfo(QString::fromStdString(open->path)).fileName() : "nothing");
  }
  std::vector<ShownRun> runs;
  QStringList log;

 private:
  const RunSession* m_session;
};

size_t ranksIn(TimelinePage& page) {
  std::set<int> ranks;
  for (const auto& lane : page.view()->data().lanes)
    ranks.insert(lane.rank);
  return ranks.size();
}

}  // namespace

class TestRunSession : public QObject {
  Q_OBJECT

 private slots:
  void testPagesGetEachRunFromTheSession() {
    QTemporaryDir dir;
    const QString a = dir.filePath("a.ddprun"), b = dir.filePath("b.ddprun");
    testing::write_test_run(a.toStdString(), 2, 5);
    testing::write_test_run(b.toStdString(), 3, 4);
    RunSession session(dir.path());
    RunTabs tabs(&session);
    auto* timeline = new TimelinePage;
    auto* other = new RecordingPage(&session);
    tabs.addPage(timeline, "timeline", "Timeline", timeline);
    tabs.addPage(other, "other", "Other", other);
    // A page wrapped in an EmptyState says why it is empty, on screen or not.
    auto* messages = new MessagesPage;
    auto* messagesEmpty = new EmptyState(messages);
    tabs.addPage(messagesEmpty, "messages", "Messages", messages);
    QVERIFY(tabs.tabIsEmpty("messages"));
    QCOMPARE(messagesEmpty->message(), RunPage::noRunOpen());
    QVERIFY(session.openRun(a));
    QCOMPARE(ranksIn(*timeline), size_t{2});
    // A small finished run fills every page at once, not only the one on screen.
    QCOMPARE(other->runs.size(), size_t{1});
    QCOMPARE(other->runs.back().run->path, a.toStdString());
    QVERIFY(other->runs.back().reader != nullptr);  // the file, open, for pages that read more
    QVERIFY2(messagesEmpty->message().startsWith("No RPC messages in this run"), qPrintable(messagesEmpty->message()));
    QVERIFY(session.openRun(b));
    QCOMPARE(ranksIn(*timeline), size_t{3});
    QCOMPARE(other->runs.back().run->path, b.toStdString());
    QVERIFY(!other->runs.back().sameRun);
    // Each page lets go of the old run before the session replaces it, then gets the new one.
    QCOMPARE(other->log, QStringList({"release 0 while nothing is open", "show a.ddprun",
                                      "release 0 while a.ddprun is open", "show b.ddprun"}));
  }

  void testAFailedOpenSaysWhyAndKeepsTheRun() {
    QTemporaryDir dir;
    const QString a = dir.filePath("a.ddprun");
    testing::write_test_run(a.toStdString(), 2, 3);
    RunSession session(dir.path());
    QVERIFY(session.openRun(a));
    QSignalSpy failed(&session, &RunSession::failed);
    const QString missing = dir.filePath("gone.ddprun");
    QVERIFY(!session.openRun(missing));
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed.front().front().toString().contains(missing), qPrintable(failed.front().front().toString()));
    QCOMPARE(session.run()->path, a.toStdString());
  }

  void testAFollowedFileReachesThePageOnScreenAndItsStallTheHangPage() {
    QTemporaryDir dir;
    const QString path = dir.filePath("live.ddprun");
    testing::write_test_run(path.toStdString(), 2, 3, "running");
    RunSession session(dir.path());
    session.setStallTimeoutMs(600);
    RunTabs tabs(&session);
    auto* onScreen = new RecordingPage(&session);
    auto* hang = new RecordingPage(&session);
    tabs.addPage(onScreen, "timeline", "Timeline", onScreen);
    tabs.addPage(hang, "hang", "Hang", hang);
    QSignalSpy stalled(&session, &RunSession::stalled);
    QString error;
    QVERIFY2(session.followRunFile(path, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!onScreen->runs.empty(), 5000);
    QVERIFY(onScreen->runs.back().run->path == path.toStdString());
    // Live reloads go to the page on screen only: the Hang page waits until it is shown...
    QVERIFY(hang->runs.empty());
    // ...or until the followed file goes quiet, which it must say at once.
    QTRY_VERIFY_WITH_TIMEOUT(stalled.size() >= 1, 10000);
    QVERIFY(session.isStalled());
    QVERIFY(!hang->runs.empty());
    QVERIFY(hang->runs.back().stalled);
    QVERIFY(!hang->runs.back().followingJob);  // another process's file: no job of ours
  }
};

DDPSCOPE_TEST_MAIN(TestRunSession)
#include "tst_run_session.moc"
