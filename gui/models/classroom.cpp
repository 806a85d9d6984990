#include "classroom.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTcpServer>
#include <QTcpSocket>
#include <algorithm>
#include <optional>

namespace ddpscope::gui {
namespace {

constexpr int kLongestLine = 16 * 1024;
constexpr int kJoinWithinMs = 5000;
// A client's lines: 20 a second, with bursts of 40; past that it is flooding and dropped.
constexpr double kLinesPerSecond = 20, kLineBurst = 40;
// Unread bytes Qt holds for one client: past this, TCP pushes back on the sender.
constexpr qint64 kReadBuffer = 64 * 1024;
// Wrong codes from one address: free for the first few (typos), then each next try waits
// twice as long as the last, up to a minute.
constexpr int kFreeWrongCodes = 3;
constexpr qint64 kLongestWaitMs = 60000;
// The code's alphabet: no 0/O or 1/I to misread. 12 of its 32 letters: 60 bits.
constexpr char kCodeLetters[] = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
constexpr int kCodeLength = 12;
constexpr int kAnswersEveryMs = 100;  // answers coalesced into one update this often
constexpr int kLongestLink = 8192;    // a lesson link, as the teacher or a student sends it

QByteArray line(const QJsonObject& o) { return QJsonDocument(o).toJson(QJsonDocument::Compact) + '\n'; }

// A code as typed: case, spaces and dashes aside ("abcd-efgh-jkmn" is "ABCDEFGHJKMN").
QString normalCode(const QString& typed) {
  QString out;
  for (const QChar c : typed.left(64))
    if (c.isLetterOrNumber()) out += c.toUpper();
  return out;
}

// Equal in time whatever the first difference: a code guessed byte by byte learns nothing.
bool sameCode(const QString& a, const QString& b) {
  const QByteArray x = normalCode(a).toUtf8(), y = normalCode(b).toUtf8();
  unsigned diff = static_cast<unsigned>(x.size() ^ y.size());
  for (int i = 0; i < std::min(x.size(), y.size()); ++i)
    diff |= static_cast<unsigned>(x[i] ^ y[i]);
  return diff == 0;
}

// The next complete line of `buffer` (without its newline) into *out; false when none yet.
// Sets *tooLong when the buffer holds more than a line may without a newline.
bool takeLine(QByteArray& buffer, QByteArray* out, bool* tooLong) {
  const int nl = buffer.indexOf('\n');
  if (nl < 0) {
    *tooLong = buffer.size() > kLongestLine;
    return false;
  }
  *tooLong = nl > kLongestLine;
  *out = buffer.left(nl);
  buffer.remove(0, nl + 1);
  return !*tooLong;
}

std::optional<QJsonObject> parseObject(const QByteArray& text) {
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(text, &error);
  if (error.error != QJsonParseError::NoError || !doc.isObject()) return std::nullopt;
  return doc.object();
}

}  // namespace

QString cleanName(const QString& given) {
  QString out;
  for (const QChar c : given.left(400)) {
    // No control or format characters (a name could reorder or hide the text around it).
    const auto cat = c.category();
    if (cat == QChar::Other_Control || cat == QChar::Other_Format || cat == QChar::Other_NotAssigned ||
        cat == QChar::Other_Surrogate || cat == QChar::Other_PrivateUse)
      out += ' ';
    else
      out += c;
  }
  return out.simplified().left(kLongestName);
}

// ---- the teacher's side ----

ClassroomServer::ClassroomServer(QObject* parent) : QObject(parent) {}

ClassroomServer::~ClassroomServer() { close(); }

bool ClassroomServer::open(const QHostAddress& address, quint16 port, QString* error) {
  close();
  m_server = new QTcpServer(this);
  if (!m_server->listen(address, port)) {
    *error = tr("cannot listen on %1:%2: %3 (choose another port)")
                 .arg(address.toString())
                 .arg(port)
                 .arg(m_server->errorString());
    delete m_server;
    m_server = nullptr;
    return false;
  }
  // 60 bits: at a guess a second it outlasts any class (a 6-digit code fell in 48 s).
  m_code.clear();
  for (int i = 0; i < kCodeLength; ++i) {
    if (i > 0 && i % 4 == 0) m_code += '-';
    m_code += QChar(kCodeLetters[QRandomGenerator::system()->bounded(32)]);
  }
  m_listening = address;
  m_wrongCodes.clear();
  connect(m_server, &QTcpServer::newConnection, this, &ClassroomServer::onConnection);
  return true;
}

void ClassroomServer::close() {
  // Quietly: closing is not students leaving one by one (and the window listening may
  // be going away).
  std::vector<Student> students;
  students.swap(m_students);
  for (Student& s : students) {
    if (!s.socket) continue;
    s.socket->disconnect(this);
    s.socket->abort();
    s.socket->deleteLater();
  }
  if (m_server) {
    m_server->close();
    delete m_server;
    m_server = nullptr;
  }
}

bool ClassroomServer::isOpen() const { return m_server && m_server->isListening(); }

quint16 ClassroomServer::port() const { return m_server ? m_server->serverPort() : 0; }

int ClassroomServer::studentCount() const {
  return static_cast<int>(
      std::count_if(m_students.begin(), m_students.end(), [](const Student& s) { return s.joined; }));
}

QStringList ClassroomServer::studentNames() const {
  QStringList names;
  for (const Student& s : m_students)
    if (s.joined) names << s.name;
  return names;
}

QList<std::pair<QString, QString>> ClassroomServer::studentPlaces() const {
  QList<std::pair<QString, QString>> places;
  for (const Student& s : m_students)
    if (s.joined) places.append({s.name, s.place});
  return places;
}

void ClassroomServer::onConnection() {
  while (QTcpSocket* socket = m_server->nextPendingConnection()) {
    socket->setParent(this);
    socket->setReadBufferSize(kReadBuffer);
    m_students.push_back({socket, {}, {}, false, {}});
    m_students.back().lineBudget = kLineBurst;
    m_students.back().budgetAt.start();
    connect(socket, &QTcpSocket::readyRead, this, [this, socket] { onReadable(socket); });
    connect(socket, &QTcpSocket::disconnected, this, [this, socket] { forget(socket); });
    // A client that says nothing (or not a join) within the time is dropped.
    QTimer::singleShot(kJoinWithinMs, socket, [this, socket] {
      Student* s = find(socket);
      if (s && !s->joined) refuse(*s, tr("no join within %1 s").arg(kJoinWithinMs / 1000), false);
    });
  }
}

ClassroomServer::Student* ClassroomServer::find(QTcpSocket* socket) {
  for (Student& s : m_students)
    if (s.socket == socket) return &s;
  return nullptr;
}

void ClassroomServer::forget(QTcpSocket* socket) {
  const bool wasJoined = find(socket) && find(socket)->joined;
  m_students.erase(std::remove_if(m_students.begin(), m_students.end(),
                                  [socket](const Student& s) { return s.socket == socket || !s.socket; }),
                   m_students.end());
  socket->deleteLater();
  if (wasJoined) emit studentsChanged(studentCount());
}

void ClassroomServer::onReadable(QTcpSocket* socket) {
  Student* s = find(socket);
  if (!s) return;
  s->buffer += socket->readAll();
  QByteArray one;
  bool tooLong = false;
  while (takeLine(s->buffer, &one, &tooLong)) {
    // A line costs one of the client's budget, refilled at kLinesPerSecond.
    s->lineBudget = std::min(kLineBurst, s->lineBudget + s->budgetAt.restart() * kLinesPerSecond / 1000.0) - 1;
    if (s->lineBudget < 0) return refuse(*s, tr("more than %1 lines a second (flooding)").arg(kLinesPerSecond), false);
    handle(*s, one);
    s = find(socket);  // handling may have dropped it
    if (!s) return;
  }
  if (tooLong) refuse(*s, tr("a line longer than %1 bytes").arg(kLongestLine), false);
}

void ClassroomServer::handle(Student& s, const QByteArray& text) {
  const std::optional<QJsonObject> message = parseObject(text);
  if (!message) return refuse(s, tr("not a JSON object"), false);
  const QString type = message->value(QStringLiteral("type")).toString();
  if (!s.joined) {
    if (type != QLatin1String("join")) return refuse(s, tr("no join first"), false);
    // Guessing: an address that sent wrong codes waits before its next try is looked at.
    const QString peer = s.socket->peerAddress().toString();
    WrongCodes& wrong = m_wrongCodes[peer];
    if (!wrong.until.hasExpired()) {
      ++m_guessesTurnedAway;
      return refuse(s,
                    tr("too many wrong join codes from %1: wait %2 s, then try again with the code on the "
                       "teacher's screen")
                        .arg(peer)
                        .arg((wrong.until.remainingTime() + 999) / 1000),
                    true);
    }
    if (!sameCode(message->value(QStringLiteral("code")).toString(), m_code)) {
      ++m_codesChecked;
      if (++wrong.count > kFreeWrongCodes) {
        const int doublings = std::min(wrong.count - kFreeWrongCodes - 1, 16);
        wrong.until.setRemainingTime(std::min<qint64>(kLongestWaitMs, qint64(1000) << doublings));
      }
      return refuse(s, tr("wrong join code: ask the teacher for the code shown on their screen"), true);
    }
    ++m_codesChecked;
    if (studentCount() >= kMaxStudents) return refuse(s, tr("the class is full (%1 students)").arg(kMaxStudents), true);
    s.joined = true;
    s.name = cleanName(message->value(QStringLiteral("name")).toString());
    if (s.name.isEmpty()) s.name = tr("student %1").arg(studentCount());
    send(s.socket, line({{QStringLiteral("type"), QStringLiteral("welcome")}}));
    if (!m_link.isEmpty()) send(s.socket, stateMessage());  // a late joiner catches up
    if (m_questionStep >= 0)
      send(s.socket, line({{QStringLiteral("type"), QStringLiteral("ask")},
                           {QStringLiteral("question"), m_question},
                           {QStringLiteral("step"), m_questionStep}}));
    emit studentsChanged(studentCount());
    return;
  }
  if (type == QLatin1String("answer")) {
    if (message->value(QStringLiteral("question")).toInt(-1) != m_question) return;  // a stale answer
    s.answer = message->value(QStringLiteral("choice")).toString().left(120);
    // Coalesced: a class answering at once is one update of the teacher's chart, not 50.
    if (!m_answersPending) {
      m_answersPending = true;
      QTimer::singleShot(kAnswersEveryMs, this, [this] {
        m_answersPending = false;
        emit answersChanged();
      });
    }
    return;
  }
  if (type == QLatin1String("place")) {
    s.place = message->value(QStringLiteral("link")).toString().left(kLongestLink);
    emit studentsChanged(studentCount());
    return;
  }
  refuse(s, tr("an unknown message \"%1\"").arg(type.left(40)), false);
}

void ClassroomServer::refuse(Student& s, const QString& why, bool tell) {
  ++m_refused;
  QTcpSocket* socket = s.socket;
  if (!socket) return;
  emit clientRefused(socket->peerAddress().toString(), why);
  if (tell) {
    send(socket, line({{QStringLiteral("type"), QStringLiteral("refused")}, {QStringLiteral("reason"), why}}));
    socket->flush();
    socket->disconnectFromHost();
  } else {
    socket->abort();
  }
}

void ClassroomServer::send(QTcpSocket* socket, const QByteArray& json) {
  if (socket && socket->state() == QAbstractSocket::ConnectedState) socket->write(json);
}

QByteArray ClassroomServer::stateMessage() const {
  return line({{QStringLiteral("type"), QStringLiteral("state")},
               {QStringLiteral("link"), m_link},
               {QStringLiteral("free"), m_free}});
}

void ClassroomServer::setState(const QString& link, bool free) {
  if (link == m_link && free == m_free) return;
  m_link = link;
  m_free = free;
  const QByteArray message = stateMessage();
  for (Student& s : m_students)
    if (s.joined) send(s.socket, message);
}

int ClassroomServer::ask(int step) {
  ++m_question;
  m_questionStep = step;
  for (Student& s : m_students)
    s.answer.clear();
  const QByteArray message = line({{QStringLiteral("type"), QStringLiteral("ask")},
                                   {QStringLiteral("question"), m_question},
                                   {QStringLiteral("step"), step}});
  for (Student& s : m_students)
    if (s.joined) send(s.socket, message);
  emit answersChanged();
  return m_question;
}

QMap<QString, int> ClassroomServer::answers() const {
  QMap<QString, int> counts;
  for (const Student& s : m_students)
    if (s.joined && !s.answer.isEmpty()) ++counts[s.answer];
  return counts;
}

// ---- a student's side ----

ClassroomClient::ClassroomClient(QObject* parent) : QObject(parent) {
  m_retry.setInterval(1000);
  m_retry.setSingleShot(true);
  connect(&m_retry, &QTimer::timeout, this, &ClassroomClient::connectNow);
}

ClassroomClient::~ClassroomClient() { leave(); }

void ClassroomClient::join(const QString& host, quint16 port, const QString& code, const QString& name) {
  leave();
  m_host = host;
  m_port = port;
  m_code = code;
  m_name = name;
  m_leaving = m_refusedForGood = false;
  connectNow();
}

void ClassroomClient::leave() {
  m_leaving = true;
  m_retry.stop();
  if (m_socket) {
    m_socket->disconnect(this);
    m_socket->abort();
    m_socket->deleteLater();
    m_socket = nullptr;
  }
  m_joined = false;
}

void ClassroomClient::connectNow() {
  if (m_leaving || m_refusedForGood) return;
  if (m_socket) {
    m_socket->disconnect(this);
    m_socket->deleteLater();
  }
  m_buffer.clear();
  m_socket = new QTcpSocket(this);
  connect(m_socket, &QTcpSocket::connected, this, [this] {
    m_socket->write(line({{QStringLiteral("type"), QStringLiteral("join")},
                          {QStringLiteral("code"), m_code},
                          {QStringLiteral("name"), m_name}}));
  });
  connect(m_socket, &QTcpSocket::readyRead, this, &ClassroomClient::onReadable);
  const auto lost = [this] {
    const bool was = m_joined;
    m_joined = false;
    if (was) emit connectionLost();
    if (!m_leaving && !m_refusedForGood) m_retry.start();  // back as soon as the teacher is
  };
  connect(m_socket, &QTcpSocket::disconnected, this, lost);
  connect(m_socket, &QTcpSocket::errorOccurred, this, [this, lost] {
    if (m_socket->state() != QAbstractSocket::ConnectedState) lost();
  });
  m_socket->connectToHost(m_host, m_port);
}

void ClassroomClient::onReadable() {
  m_buffer += m_socket->readAll();
  QByteArray one;
  bool tooLong = false;
  while (takeLine(m_buffer, &one, &tooLong)) {
    const std::optional<QJsonObject> m = parseObject(one);
    if (!m) continue;  // not ours: ignored, the teacher's app never sends it
    const QString type = m->value(QStringLiteral("type")).toString();
    if (type == QLatin1String("welcome")) {
      m_joined = true;
      if (!m_place.isEmpty()) tellPlace(m_place);  // the teacher's app forgot it with the connection
      emit joined();
    } else if (type == QLatin1String("refused")) {
      m_refusedForGood = true;
      emit refused(m->value(QStringLiteral("reason")).toString().left(200));
    } else if (type == QLatin1String("state")) {
      m_link = m->value(QStringLiteral("link")).toString().left(kLongestLink);
      m_free = m->value(QStringLiteral("free")).toBool();
      emit stateReceived(m_link, m_free);
    } else if (type == QLatin1String("ask")) {
      m_question = m->value(QStringLiteral("question")).toInt();
      m_questionStep = m->value(QStringLiteral("step")).toInt(-1);
      emit asked(m_question, m_questionStep);
    }
  }
  if (tooLong) m_buffer.clear();
}

void ClassroomClient::answer(const QString& choice) {
  if (!m_joined || !m_socket) return;
  m_socket->write(line({{QStringLiteral("type"), QStringLiteral("answer")},
                        {QStringLiteral("question"), m_question},
                        {QStringLiteral("choice"), choice.left(120)}}));
}

void ClassroomClient::tellPlace(const QString& link) {
  m_place = link.left(kLongestLink);
  if (!m_joined || !m_socket) return;
  m_socket->write(line({{QStringLiteral("type"), QStringLiteral("place")}, {QStringLiteral("link"), m_place}}));
}

}  // namespace ddpscope::gui
