#include "classroom_controller.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QDialog>
#include <QFileInfo>
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
#include "ddpscope/host_port.h"
#include "plural.h"

namespace ddpscope::gui {

ClassroomController::ClassroomController(LearnPage* page, QObject* parent)
    : QObject(parent), m_page(page), m_status(new QLabel) {
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

namespace {

// Where a link points, in words: "step 9", or "lesson 3, step 9" when it is not the
// lesson of `other` (the teacher's).
QString placeWords(const QString& link, const QString& other) {
  QString why;
  const auto at = LessonLink::parse(link, static_cast<int>(lessons().size()), &why);
  if (!at) return ClassroomController::tr("somewhere else");
  const auto theirs = LessonLink::parse(other, static_cast<int>(lessons().size()), &why);
  const bool sameLesson =
      theirs && theirs->source == at->source && theirs->lesson == at->lesson && theirs->path == at->path;
  const QString step = ClassroomController::tr("step %1").arg(at->step);
  if (sameLesson) return step;
  return at->source == LessonLink::Source::Builtin
             ? ClassroomController::tr("lesson %1, %2").arg(at->lesson + 1).arg(step)
             : ClassroomController::tr("%1, %2").arg(QFileInfo(at->path).fileName(), step);
}

// Whether `a` and `b` name the same lesson and step (their view options aside).
bool sameStep(const LessonLink& a, const LessonLink& b) {
  return a.source == b.source && a.lesson == b.lesson && a.path == b.path && a.step == b.step;
}

}  // namespace

// A student not stepping freely shows the teacher's lesson and step, unless they went
// on their own (then only the words say where the teacher is).
void ClassroomController::followTeacher(const QString& text, bool free) {
  if (m_teacherFree && !free) m_onOwn = false;  // called back
  m_teacherLink = text;
  m_teacherFree = free;
  if (m_onOwn && !free) {
    showStatus();
    return;
  }
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

// The student's page showed a step. Not the teacher's, while following, and not on the
// way to it (a lesson still loading): they stepped away, and stop following.
void ClassroomController::noticeOwnStep() {
  if (!m_client || !m_client->isJoined() || m_teacherFree || !m_following.isEmpty()) return;
  if (!m_page->hasLesson()) return;
  const LessonLink here = m_page->linkToStep();
  if (!m_onOwn) {
    QString why;
    const auto teacher = LessonLink::parse(m_teacherLink, static_cast<int>(lessons().size()), &why);
    if (!teacher || sameStep(*teacher, here)) return;
    m_onOwn = true;
    emit statusMessage(tr("You stepped away from the teacher: Learn > Follow the teacher takes you back"));
  }
  m_client->tellPlace(here.toString());
  showStatus();
}

void ClassroomController::followAgain() {
  if (!m_client || !m_onOwn) return;
  m_onOwn = false;
  m_client->tellPlace(QString());
  followTeacher(m_teacherLink, m_teacherFree);
}

// The students' names, each who stepped away with where they are.
QStringList ClassroomController::namesWithPlaces() const {
  QStringList names;
  for (const auto& [name, place] : m_server->studentPlaces())
    names << (place.isEmpty() ? name : tr("%1 (on their own at %2)").arg(name, placeWords(place, m_server->link())));
  return names;
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
  m_followAgain = learn->addAction(tr("Follow the &teacher again"), this, [this] { followAgain(); });
  m_followAgain->setEnabled(false);
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
  if (!m_page->hasLesson()) m_page->openLink(LessonLink{}, &unused);  // the first lesson's first step
  const auto publish = [this] {
    if (m_server && m_page->hasLesson())
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
  if (m_followAgain) m_followAgain->setEnabled(m_client && m_onOwn);
  if (!m_status) return;  // the window, and its status bar, are going
  if (!m_bar) {
    m_bar = new ClassBar;
    m_page->setClassBar(m_bar);
  }
  if (m_server) {
    const QHostAddress on = m_server->listeningOn();
    const bool every = on == QHostAddress::Any || on == QHostAddress::AnyIPv4 || on == QHostAddress::AnyIPv6;
    m_bar->showTeaching(address(), every ? tr("listening on every interface") : tr("listening on that address only"),
                        m_server->code(), namesWithPlaces());
    QString text =
        tr("Class at %1 (%2) · join code %3 · %4")
            .arg(address(), every ? tr("listening on every interface") : tr("listening on that address only"),
                 m_server->code(), countOf(m_server->studentCount(), tr("student")));
    // Names as the students gave them (cleaned: classroom.h's cleanName), the first few.
    const QStringList names = namesWithPlaces();
    constexpr int kShown = 8;
    if (!names.isEmpty())
      text += QStringLiteral(": ") + names.mid(0, kShown).join(QStringLiteral(", ")) +
              (names.size() > kShown ? tr(" and %1 more").arg(names.size() - kShown) : QString());
    m_status->setText(text);
    m_status->setToolTip(names.join(QLatin1Char('\n')));
  } else if (m_client) {
    const QString doing = !m_client->isJoined() ? tr("connecting...")
                          : m_client->isFree()  ? tr("stepping freely")
                          : m_onOwn ? tr("on your own (the teacher is at %1; Learn > Follow the teacher again)")
                                          .arg(placeWords(m_teacherLink, m_page->linkToStep().toString()))
                                    : tr("following the teacher");
    m_bar->showJoined(m_client->where(), m_client->name(), doing);
    m_status->setText(tr("In class: %1").arg(doing));
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
  const int question = m_server->ask(m_page->linkToStep().step);
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
      m_page->revealNextStep();
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
  // Whole students only: ticks at integers (5 ticks from 0 to 1 read "0 0 0 0 1"), at most
  // about ten of them.
  const int step = std::max(1, (most + 9) / 10);
  auto* axisX = new QValueAxis;
  axisX->setRange(0, (most + step - 1) / step * step);
  axisX->setTickType(QValueAxis::TicksDynamic);
  axisX->setTickAnchor(0);
  axisX->setTickInterval(step);
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
  HostPort teacher;
  const bool hostAndPort = split_host_port(where.toStdString(), teacher).empty() && !teacher.port.empty();
  const int port = hostAndPort ? port_number(teacher.port) : -1;
  if (port < 0) {
    *error = tr("\"%1\" is not HOST:PORT (the address the teacher's screen shows, e.g. 192.168.1.20:47123)")
                 .arg(where.left(80));
    return false;
  }
  end();
  m_onOwn = m_teacherFree = false;
  m_teacherLink.clear();
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
  connect(m_page, &LearnPage::stepShown, m_client, [this] { noticeOwnStep(); });
  connect(m_client, &ClassroomClient::asked, this, [this](int, int step) {
    if (m_client->isFree() || m_onOwn || m_page->linkToStep().step != step) return;
    m_page->askNextStep();  // the student clicks an answer
    emit statusMessage(tr("The teacher asks: what happens next? Click your answer"));
  });
  connect(m_page, &LearnPage::answered, m_client, &ClassroomClient::answer);
  m_client->join(QString::fromStdString(teacher.host), static_cast<quint16>(port), code, name);
  emit showPage();
  showStatus();
  return true;
}

}  // namespace ddpscope::gui
