// A class over the network (classroom.h): Learn > Teach a class... makes this app the
// teacher's (its lesson and step go to every student; students may step freely and be
// called back; in predict mode the class's answers are counted as a bar chart before the
// step is revealed). Learn > Join a class... makes it a student's: it follows the
// teacher's step unless the teacher lets it step freely.
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QDialog>
#include <QHorizontalBarSeries>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QNetworkInterface>
#include <QPushButton>
#include <QStatusBar>
#include <QValueAxis>
#include <QVBoxLayout>
#include <cstdio>

#include "classroom.h"
#include "learn_page.h"
#include "lesson_catalog.h"
#include "lesson_link.h"
#include "main_window.h"

#include "class_bar.h"

namespace ddpscope::gui {

void MainWindow::buildClassMenu(QMenu* learn) {
  learn->addSeparator();
  learn->addAction(tr("&Teach a class..."), this, [this] {
    // The teacher chooses where students may reach the class: one network, this machine
    // only, or every interface.
    QStringList choices;
    QList<QHostAddress> addresses;
    for (const QHostAddress& a : QNetworkInterface::allAddresses())
      if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback()) {
        choices << tr("%1 (students on that network)").arg(a.toString());
        addresses << a;
      }
    choices << tr("127.0.0.1 (this machine only)") << tr("every interface (0.0.0.0)");
    addresses << QHostAddress(QHostAddress::LocalHost) << QHostAddress(QHostAddress::AnyIPv4);
    bool ok = false;
    const QString chosen =
        QInputDialog::getItem(this, tr("Teach a class"), tr("Listen for students on:"), choices, 0, false, &ok);
    if (!ok) return;
    QString error;
    if (!teachClass(0, &error, addresses.value(static_cast<int>(choices.indexOf(chosen)))))
      emit loadFailed(tr("Cannot open a class: %1").arg(error));
  });
  m_classFree = learn->addAction(tr("Let students step &freely"), this, [this](bool on) {
    if (m_classServer) m_classServer->setState(m_learn->linkToStep().toString(), on);
  });
  m_classFree->setCheckable(true);
  learn->addAction(tr("Call the class &back"), this, [this] {
    m_classFree->setChecked(false);
    if (m_classServer) m_classServer->setState(m_learn->linkToStep().toString(), false);
  });
  learn->addAction(tr("&Ask the class"), this, [this] { askClass(); });
  learn->addAction(tr("&End the class"), this, [this] { endClass(); });
  learn->addSeparator();
  learn->addAction(tr("&Join a class..."), this, [this] {
    bool ok = false;
    const QString where = QInputDialog::getText(this, tr("Join a class"), tr("The teacher's address (HOST:PORT):"),
                                                QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
    const QString code = QInputDialog::getText(this, tr("Join a class"), tr("The join code on the teacher's screen:"),
                                               QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
    const QString name = QInputDialog::getText(this, tr("Join a class"), tr("Your name:"), QLineEdit::Normal,
                                               qEnvironmentVariable("USER"), &ok);
    if (!ok) return;
    QString error;
    if (!joinClass(where, code, name, &error)) emit loadFailed(tr("Cannot join the class: %1").arg(error));
  });
}

bool MainWindow::teachClass(quint16 port, QString* error, const QHostAddress& address) {
  endClass();
  m_classServer = new ClassroomServer(this);
  if (!m_classServer->open(address, port, error)) {
    delete m_classServer;
    m_classServer = nullptr;
    return false;
  }
  if (m_learn->lesson().steps.empty()) openLesson(0);
  const auto publish = [this] {
    if (m_classServer && !m_learn->lesson().steps.empty())
      m_classServer->setState(m_learn->linkToStep().toString(), m_classFree->isChecked());
  };
  connect(m_learn, &LearnPage::stepShown, m_classServer, publish);  // a new lesson shows its step 0 too
  connect(m_classServer, &ClassroomServer::studentsChanged, this, [this] { showClassStatus(); });
  connect(m_classServer, &ClassroomServer::answersChanged, this, [this] { showClassAnswers(); });
  publish();
  showTab(QStringLiteral("learn"));
  showClassStatus();
  return true;
}

// Where students reach the class: the address it listens on, or, listening on every
// interface, this machine's non-loopback IPv4 addresses (else loopback).
QString MainWindow::classAddress() const {
  const QHostAddress on = m_classServer->listeningOn();
  if (on != QHostAddress::Any && on != QHostAddress::AnyIPv4 && on != QHostAddress::AnyIPv6)
    return on.toString() + QStringLiteral(":") + QString::number(m_classServer->port());
  QStringList hosts;
  for (const QHostAddress& a : QNetworkInterface::allAddresses())
    if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback()) hosts << a.toString();
  if (hosts.isEmpty()) hosts << QStringLiteral("127.0.0.1");
  return hosts.join(QStringLiteral(" or ")) + QStringLiteral(":") + QString::number(m_classServer->port());
}

void MainWindow::showClassStatus() {
  if (!m_classStatus) {
    m_classStatus = new QLabel;
    m_classStatus->setTextFormat(Qt::PlainText);  // students' names are theirs to choose: never markup
    statusBar()->addPermanentWidget(m_classStatus);
  }
  if (!m_classBar) {
    m_classBar = new ClassBar;
    m_learn->setClassBar(m_classBar);
  }
  if (m_classServer) {
    const QHostAddress on = m_classServer->listeningOn();
    const bool every = on == QHostAddress::Any || on == QHostAddress::AnyIPv4 || on == QHostAddress::AnyIPv6;
    m_classBar->showTeaching(classAddress(),
                             every ? tr("listening on every interface") : tr("listening on that address only"),
                             m_classServer->code(), m_classServer->studentNames());
    QString text =
        tr("Class at %1 (%2) · join code %3 · %n student(s)", "", m_classServer->studentCount())
            .arg(classAddress(), every ? tr("listening on every interface") : tr("listening on that address only"),
                 m_classServer->code());
    // Names as the students gave them (cleaned: classroom.h's cleanName), the first few.
    const QStringList names = m_classServer->studentNames();
    constexpr int kShown = 8;
    if (!names.isEmpty())
      text += QStringLiteral(": ") + names.mid(0, kShown).join(QStringLiteral(", ")) +
              (names.size() > kShown ? tr(" and %1 more").arg(names.size() - kShown) : QString());
    m_classStatus->setText(text);
    m_classStatus->setToolTip(names.join(QLatin1Char('\n')));
  } else if (m_classClient) {
    m_classBar->showJoined(m_classClient->where(), m_classClient->name(),
                           m_classClient->isJoined()
                               ? (m_classClient->isFree() ? tr("stepping freely") : tr("following the teacher"))
                               : tr("connecting..."));
    m_classStatus->setText(m_classClient->isJoined() ? (m_classClient->isFree() ? tr("In class: stepping freely")
                                                                                : tr("In class: following the teacher"))
                                                     : tr("In class: connecting..."));
  } else {
    m_classStatus->clear();
    m_classBar->showNoClass();
  }
}

int MainWindow::askClass() {
  if (!m_classServer) {
    statusBar()->showMessage(tr("Teach a class first (Learn > Teach a class...)"));
    return -1;
  }
  const int question = m_classServer->ask(static_cast<int>(m_learn->applied()));
  showClassAnswers();
  return question;
}

// The class's answers to the question asked, as bars, before the step is revealed.
void MainWindow::showClassAnswers() {
  if (!m_classServer) return;
  if (!m_classAnswers) {
    m_classAnswers = new QDialog(this);
    m_classAnswers->setWindowTitle(tr("The class's answers"));
    auto* layout = new QVBoxLayout(m_classAnswers);
    m_classAnswersView = new QChartView;
    m_classAnswersView->setMinimumSize(420, 260);
    layout->addWidget(m_classAnswersView);
    auto* reveal = new QPushButton(tr("Reveal the step"));
    connect(reveal, &QPushButton::clicked, this, [this] {
      m_learn->predictBox()->setChecked(false);
      m_learn->stepForward();
      m_classAnswers->hide();
    });
    layout->addWidget(reveal);
  }
  const QMap<QString, int> answers = m_classServer->answers();
  if (m_classBar) m_classBar->showAnswers(answers, m_classServer->studentCount());
  auto* chart = new QChart;
  auto* set = new QBarSet(tr("students"));
  QStringList choices;
  int most = 1;
  for (auto it = answers.begin(); it != answers.end(); ++it) {
    choices << it.key();
    *set << it.value();
    most = std::max(most, it.value());
  }
  auto* series = new QHorizontalBarSeries;
  series->append(set);
  chart->addSeries(series);
  auto* axisY = new QBarCategoryAxis;
  axisY->append(choices);
  chart->addAxis(axisY, Qt::AlignLeft);
  series->attachAxis(axisY);
  auto* axisX = new QValueAxis;
  axisX->setRange(0, most);
  axisX->setLabelFormat(QStringLiteral("%d"));
  chart->addAxis(axisX, Qt::AlignBottom);
  series->attachAxis(axisX);
  chart->legend()->hide();
  int total = 0;
  for (int v : answers)
    total += v;
  chart->setTitle(tr("%1 of %2 student(s) answered").arg(total).arg(m_classServer->studentCount()));
  QChart* old = m_classAnswersView->chart();
  m_classAnswersView->setChart(chart);
  delete old;
  m_classAnswers->show();
}

void MainWindow::endClass() {
  if (m_classServer) {
    m_classServer->disconnect(this);
    m_classServer->close();
    m_classServer->deleteLater();
    m_classServer = nullptr;
  }
  if (m_classClient) {
    m_classClient->disconnect(this);
    m_classClient->leave();
    m_classClient->deleteLater();
    m_classClient = nullptr;
  }
  if (m_classAnswers) m_classAnswers->hide();
  if (m_classStatus) showClassStatus();
}

bool MainWindow::joinClass(const QString& where, const QString& code, const QString& name, QString* error) {
  const int colon = where.lastIndexOf(QLatin1Char(':'));
  bool ok = false;
  const int port = colon > 0 ? where.mid(colon + 1).toInt(&ok) : 0;
  if (!ok || port < 1 || port > 65535) {
    *error = tr("\"%1\" is not HOST:PORT (the address the teacher's screen shows, e.g. 192.168.1.20:47123)")
                 .arg(where.left(80));
    return false;
  }
  endClass();
  m_classClient = new ClassroomClient(this);
  connect(m_classClient, &ClassroomClient::joined, this, [this] {
    std::printf("class: joined\n");
    std::fflush(stdout);
    showClassStatus();
  });
  connect(m_classClient, &ClassroomClient::refused, this, [this](const QString& why) {
    std::printf("class: refused: %s\n", qPrintable(why));
    std::fflush(stdout);
    emit loadFailed(tr("The class refused this app: %1").arg(why));
    showClassStatus();
  });
  connect(m_classClient, &ClassroomClient::connectionLost, this, [this] {
    std::printf("class: connection lost, reconnecting\n");
    std::fflush(stdout);
    showClassStatus();
  });
  connect(m_classClient, &ClassroomClient::stateReceived, this, [this](const QString& link, bool free) {
    showClassStatus();
    if (free) {
      std::printf("class: free\n");
      std::fflush(stdout);
      return;
    }
    QString why;
    if (!openLink(link, &why)) {
      statusBar()->showMessage(tr("The teacher's step cannot be shown here: %1").arg(why));
      std::printf("class: cannot follow: %s\n", qPrintable(why));
    } else {
      std::printf("class: at %s\n", qPrintable(link));
    }
    std::fflush(stdout);
  });
  connect(m_classClient, &ClassroomClient::asked, this, [this](int, int step) {
    if (m_classClient->isFree() || static_cast<int>(m_learn->applied()) != step) return;
    m_learn->predictBox()->setChecked(true);
    m_learn->stepForward();  // asks: the student clicks an answer
    statusBar()->showMessage(tr("The teacher asks: what happens next? Click your answer"));
  });
  connect(m_learn, &LearnPage::answered, m_classClient, &ClassroomClient::answer);
  m_classClient->join(where.left(colon), static_cast<quint16>(port), code, name);
  showTab(QStringLiteral("learn"));
  showClassStatus();
  return true;
}

}  // namespace ddpscope::gui
