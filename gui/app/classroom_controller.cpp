#include "classroom_controller.h"

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
#include <QNetworkInterface>
#include <QPushButton>
#include <QValueAxis>
#include <QVBoxLayout>
#include <cstdio>

#include "class_bar.h"
#include "classroom.h"
#include "learn_page.h"
#include "lesson_catalog.h"
#include "lesson_link.h"
#include "plural.h"

namespace ddpscope::gui {

ClassroomController::ClassroomController(LearnPage* page) : QObject(page), m_page(page), m_status(new QLabel) {
  m_status->setTextFormat(Qt::PlainText);  // students' names are theirs to choose: never markup
  // The page shows the teacher's step once it is loaded (off the UI thread when it is
  // another lesson): then the student's app says where it is.
  connect(page, &LearnPage::linkShown, this, [this] {
    if (m_following.isEmpty()) return;
    std::printf("class: at %s\n", qPrintable(m_following));
    std::fflush(stdout);
    m_following.clear();
  });
  connect(page, &LearnPage::linkFailed, this, [this](const QString& why) {
    if (m_following.isEmpty()) return;
    emit statusMessage(tr("The teacher's step cannot be shown here: %1").arg(why));
    std::printf("class: cannot follow: %s\n", qPrintable(why));
    std::fflush(stdout);
    m_following.clear();
  });
}

// The status label may sit in a window's status bar, which then owns it.
ClassroomController::~ClassroomController() {
  // Students hear the class end; nothing they say back reaches this half-destroyed object.
  if (m_server) {
    m_server->disconnect(this);
    m_server->close();
  }
  if (m_client) {
    m_client->disconnect(this);
    m_client->leave();
  }
  if (m_status && !m_status->parent()) delete m_status;
}

// A student not stepping freely shows the teacher's lesson and step.
void ClassroomController::followTeacher(const QString& text, bool free) {
  showStatus();
  if (free) {
    std::printf("class: free\n");
    std::fflush(stdout);
    return;
  }
  QString why;
  const std::optional<LessonLink> link = LessonLink::parse(text, static_cast<int>(lessons().size()), &why);
  m_following = text;
  if (link) {
    m_page->followLink(*link);
  } else {
    emit m_page->linkFailed(why);
  }
}

void ClassroomController::addActions(QMenu* learn) {
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
        QInputDialog::getItem(m_page, tr("Teach a class"), tr("Listen for students on:"), choices, 0, false, &ok);
    if (!ok) return;
    QString error;
    if (!teach(0, &error, addresses.value(static_cast<int>(choices.indexOf(chosen)))))
      emit failed(tr("Cannot open a class: %1").arg(error));
  });
  m_free = learn->addAction(tr("Let students step &freely"), this, [this](bool on) {
    if (m_server) m_server->setState(m_page->linkToStep().toString(), on);
  });
  m_free->setCheckable(true);
  learn->addAction(tr("Call the class &back"), this, [this] {
    m_free->setChecked(false);
    if (m_server) m_server->setState(m_page->linkToStep().toString(), false);
  });
  learn->addAction(tr("&Ask the class"), this, [this] { ask(); });
  learn->addAction(tr("&End the class"), this, [this] { end(); });
  learn->addSeparator();
  learn->addAction(tr("&Join a class..."), this, [this] {
    bool ok = false;
    const QString where = QInputDialog::getText(m_page, tr("Join a class"), tr("The teacher's address (HOST:PORT):"),
                                                QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
    const QString code = QInputDialog::getText(m_page, tr("Join a class"), tr("The join code on the teacher's screen:"),
                                               QLineEdit::Normal, QString(), &ok);
    if (!ok) return;
    const QString name = QInputDialog::getText(m_page, tr("Join a class"), tr("Your name:"), QLineEdit::Normal,
                                               qEnvironmentVariable("USER"), &ok);
    if (!ok) return;
    QString error;
    if (!join(where, code, name, &error)) emit failed(tr("Cannot join the class: %1").arg(error));
  });
}

bool ClassroomController::teach(quint16 port, QString* error, const QHostAddress& address) {
  end();
  m_server = new ClassroomServer(this);
  if (!m_server->open(address, port, error)) {
    delete m_server;
    m_server = nullptr;
    return false;
  }
  QString unused;
  if (m_page->lesson().steps.empty()) m_page->openLesson(0, &unused);
  const auto publish = [this] {
    if (m_server && !m_page->lesson().steps.empty())
      m_server->setState(m_page->linkToStep().toString(), m_free && m_free->isChecked());
  };
  connect(m_page, &LearnPage::stepShown, m_server, publish);  // a new lesson shows its step 0 too
  connect(m_server, &ClassroomServer::studentsChanged, this, [this] { showStatus(); });
  connect(m_server, &ClassroomServer::answersChanged, this, [this] { showAnswers(); });
  publish();
  emit showPage();
  showStatus();
  return true;
}

// Where students reach the class: the address it listens on, or, listening on every
// interface, this machine's non-loopback IPv4 addresses (else loopback).
QString ClassroomController::address() const {
  const QHostAddress on = m_server->listeningOn();
  if (on != QHostAddress::Any && on != QHostAddress::AnyIPv4 && on != QHostAddress::AnyIPv6)
    return on.toString() + QStringLiteral(":") + QString::number(m_server->port());
  QStringList hosts;
  for (const QHostAddress& a : QNetworkInterface::allAddresses())
    if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback()) hosts << a.toString();
  if (hosts.isEmpty()) hosts << QStringLiteral("127.0.0.1");
  return hosts.join(QStringLiteral(" or ")) + QStringLiteral(":") + QString::number(m_server->port());
}

void ClassroomController::showStatus() {
  if (!m_status) return;  // the window, and its status bar, are going
  if (!m_bar) {
    m_bar = new ClassBar;
    m_page->setClassBar(m_bar);
  }
  if (m_server) {
    const QHostAddress on = m_server->listeningOn();
    const bool every = on == QHostAddress::Any || on == QHostAddress::AnyIPv4 || on == QHostAddress::AnyIPv6;
    m_bar->showTeaching(address(), every ? tr("listening on every interface") : tr("listening on that address only"),
                        m_server->code(), m_server->studentNames());
    QString text =
        tr("Class at %1 (%2) · join code %3 · %4")
            .arg(address(), every ? tr("listening on every interface") : tr("listening on that address only"),
                 m_server->code(), countOf(m_server->studentCount(), tr("student")));
    // Names as the students gave them (cleaned: classroom.h's cleanName), the first few.
    const QStringList names = m_server->studentNames();
    constexpr int kShown = 8;
    if (!names.isEmpty())
      text += QStringLiteral(": ") + names.mid(0, kShown).join(QStringLiteral(", ")) +
              (names.size() > kShown ? tr(" and %1 more").arg(names.size() - kShown) : QString());
    m_status->setText(text);
    m_status->setToolTip(names.join(QLatin1Char('\n')));
  } else if (m_client) {
    m_bar->showJoined(m_client->where(), m_client->name(),
                      m_client->isJoined() ? (m_client->isFree() ? tr("stepping freely") : tr("following the teacher"))
                                           : tr("connecting..."));
    m_status->setText(m_client->isJoined() ? (m_client->isFree() ? tr("In class: stepping freely")
                                                                 : tr("In class: following the teacher"))
                                           : tr("In class: connecting..."));
  } else {
    m_status->clear();
    m_bar->showNoClass();
  }
}

int ClassroomController::ask() {
  if (!m_server) {
    emit statusMessage(tr("Teach a class first (Learn > Teach a class...)"));
    return -1;
  }
  const int question = m_server->ask(static_cast<int>(m_page->applied()));
  showAnswers();
  return question;
}

// The class's answers to the question asked, as bars, before the step is revealed.
void ClassroomController::showAnswers() {
  if (!m_server) return;
  if (!m_answers) {
    m_answers = new QDialog(m_page);
    m_answers->setWindowTitle(tr("The class's answers"));
    auto* layout = new QVBoxLayout(m_answers);
    m_answersView = new QChartView;
    m_answersView->setMinimumSize(420, 260);
    layout->addWidget(m_answersView);
    auto* reveal = new QPushButton(tr("Reveal the step"));
    connect(reveal, &QPushButton::clicked, this, [this] {
      m_page->predictBox()->setChecked(false);
      m_page->stepForward();
      m_answers->hide();
    });
    layout->addWidget(reveal);
  }
  const QMap<QString, int> answers = m_server->answers();
  if (m_bar) m_bar->showAnswers(answers, m_server->studentCount());
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
  chart->setTitle(tr("%1 of %2 answered").arg(total).arg(countOf(m_server->studentCount(), tr("student"))));
  QChart* old = m_answersView->chart();
  m_answersView->setChart(chart);
  delete old;
  m_answers->show();
}

void ClassroomController::end() {
  if (m_server) {
    m_server->disconnect(this);
    m_server->close();
    m_server->deleteLater();
    m_server = nullptr;
  }
  if (m_client) {
    m_client->disconnect(this);
    m_client->leave();
    m_client->deleteLater();
    m_client = nullptr;
  }
  if (m_answers) m_answers->hide();
  if (m_bar) showStatus();
}

bool ClassroomController::join(const QString& where, const QString& code, const QString& name, QString* error) {
  const int colon = where.lastIndexOf(QLatin1Char(':'));
  bool ok = false;
  const int port = colon > 0 ? where.mid(colon + 1).toInt(&ok) : 0;
  if (!ok || port < 1 || port > 65535) {
    *error = tr("\"%1\" is not HOST:PORT (the address the teacher's screen shows, e.g. 192.168.1.20:47123)")
                 .arg(where.left(80));
    return false;
  }
  end();
  m_client = new ClassroomClient(this);
  connect(m_client, &ClassroomClient::joined, this, [this] {
    std::printf("class: joined\n");
    std::fflush(stdout);
    showStatus();
  });
  connect(m_client, &ClassroomClient::refused, this, [this](const QString& why) {
    std::printf("class: refused: %s\n", qPrintable(why));
    std::fflush(stdout);
    emit failed(tr("The class refused this app: %1").arg(why));
    showStatus();
  });
  connect(m_client, &ClassroomClient::connectionLost, this, [this] {
    std::printf("class: connection lost, reconnecting\n");
    std::fflush(stdout);
    showStatus();
  });
  connect(m_client, &ClassroomClient::stateReceived, this, &ClassroomController::followTeacher);
  connect(m_client, &ClassroomClient::asked, this, [this](int, int step) {
    if (m_client->isFree() || static_cast<int>(m_page->applied()) != step) return;
    m_page->predictBox()->setChecked(true);
    m_page->stepForward();  // asks: the student clicks an answer
    emit statusMessage(tr("The teacher asks: what happens next? Click your answer"));
  });
  connect(m_page, &LearnPage::answered, m_client, &ClassroomClient::answer);
  m_client->join(where.left(colon), static_cast<quint16>(port), code, name);
  emit showPage();
  showStatus();
  return true;
}

}  // namespace ddpscope::gui
