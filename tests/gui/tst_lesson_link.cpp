// Links to a lesson's step (ddpscope:learn?...): written and read back, bad ones refused.
#include <QtTest/QtTest>

#include "lesson_links_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;
using namespace ddpscope::gui::lesson_links_fixture;

class TestLessonLink : public LessonLinksTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testLinksRoundTripAndBadOnesAreRefused() {
    LessonLink file;
    file.source = LessonLink::Source::File;
    file.path = "/home/a teacher/50% & more #1/ring.ddplesson";
    file.step = 17;
    file.predict = true;
    file.zoom = 1.5;
    QString error;
    QCOMPARE(LessonLink::parse(file.toString(), 6, &error), std::optional<LessonLink>(file));
    LessonLink builtin;
    builtin.lesson = 3;
    builtin.step = 40;
    builtin.sideBySide = true;
    QCOMPARE(builtin.toString(), QString("ddpscope:learn?lesson=4&step=40&side=1"));
    QCOMPARE(LessonLink::parse(builtin.toString(), 6, &error), std::optional<LessonLink>(builtin));
    const QList<QPair<QString, QString>> bad = {
        {"https://example.com/learn?lesson=1", "not a ddpscope link"},
        {"ddpscope:timeline?lesson=1", "links to the Learn tab"},
        {"ddpscope:learn?lesson=99", "from 1 to 6"},
        {"ddpscope:learn?lesson=1&file=/a.ddplesson", "one lesson"},
        {"ddpscope:learn?file=rel/a.ddplesson", "not an absolute path"},
        {"ddpscope:learn?file=/etc/passwd", "not a .ddplesson file"},
        {"ddpscope:learn?run=/tmp/x.ddprun&step=-1", "step"},
        {"ddpscope:learn?lesson=1&zoom=1e9", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=nan", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=inf", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=-nan", "zoom"},
        {"ddpscope:learn?lesson=1&step=1e99", "step"},
    };
    for (const auto& [text, why] : bad) {
      QVERIFY2(!LessonLink::parse(text, 6, &error), qPrintable(text));
      QVERIFY2(error.contains(why), qPrintable(text + " -> " + error));
    }
  }
};

DDPSCOPE_TEST_MAIN(TestLessonLink)
#include "tst_lesson_link.moc"
