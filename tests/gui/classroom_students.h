// Students for the classroom tests: real `ddpscope --join` apps (offscreen) whose output is
// read as they say what they do, and the line a student says when it reaches a step.
#pragma once

#include <QtTest/QtTest>

#include <QChart>
#include <QChartView>
#include <QValueAxis>
#include <QProcess>
#include <QLabel>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <cmath>
#include <memory>
#include "class_bar.h"
#include "classroom.h"
#include "lesson_catalog.h"
#include "graph_view.h"
#include "learn_page.h"
#include "lesson.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"

namespace ddpscope::gui::classroom_students {

// A student's app, its stdout read as it says what it does ("class: at LINK").
class Student {
 public:
  Student(quint16 port, const QString& code, const QString& name) {
    m_app.setProcessChannelMode(QProcess::MergedChannels);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    m_app.setProcessEnvironment(env);
    m_app.start(QStringLiteral(DDPSCOPE_APP_PATH),
                {"--join", QString("127.0.0.1:%1").arg(port), "--code", code, "--name", name});
  }
  ~Student() {
    m_app.kill();
    m_app.waitForFinished(5000);
  }
  // Waits until the app has said `line` (counting from the start); false after 20 s.
  bool said(const QString& line, int times = 1) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 20000) {
      m_out += QString::fromUtf8(m_app.readAll());
      if (m_out.count(line) >= times) return true;
      QTest::qWait(50);
    }
    return false;
  }
  QString out() const { return m_out; }

 private:
  QProcess m_app;
  QString m_out;
};

inline QString at(int lesson, int step) {
  return QString("class: at ddpscope:learn?lesson=%1&step=%2\n").arg(lesson).arg(step);
}

}  // namespace ddpscope::gui::classroom_students
