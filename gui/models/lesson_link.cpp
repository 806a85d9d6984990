#include "lesson_link.h"

#include <cmath>
#include <QCoreApplication>
#include <QDir>
#include <QStringList>
#include <QUrl>
#include <QUrlQuery>

namespace ddpscope::gui {
namespace {

QString linkTr(const char* text) { return QCoreApplication::translate("LessonLink", text); }

// A whole number in [lo, hi] from the link's `key`; false with *error when it is not.
bool readInt(const QUrlQuery& q, const QString& key, int lo, int hi, int* out, QString* error) {
  if (!q.hasQueryItem(key)) return true;
  bool ok = false;
  const int v = q.queryItemValue(key).toInt(&ok);
  if (!ok || v < lo || v > hi) {
    *error = linkTr("the link's %1 is \"%2\": a whole number from %3 to %4 is expected")
                 .arg(key, q.queryItemValue(key).left(40))
                 .arg(lo)
                 .arg(hi);
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

QString LessonLink::toString() const {
  // Every value percent-encoded but '/', so a path with spaces, '&', '#' or '%' comes back
  // whole (QUrlQuery would leave '&' and '%' of a path to mean something else).
  const auto item = [](const char* key, const QString& value) {
    return QString::fromLatin1(key) + QLatin1Char('=') + QString::fromLatin1(QUrl::toPercentEncoding(value, "/"));
  };
  QStringList items;
  switch (source) {
    case Source::Builtin: items << item("lesson", QString::number(lesson + 1)); break;
    case Source::File: items << item("file", path); break;
    case Source::Run: items << item("run", path); break;
  }
  items << item("step", QString::number(step));
  if (sideBySide) items << item("side", QStringLiteral("1"));
  if (predict) items << item("predict", QStringLiteral("1"));
  if (zoom > 0) items << item("zoom", QString::number(zoom, 'g', 4));
  return QStringLiteral("ddpscope:learn?") + items.join(QLatin1Char('&'));
}

std::optional<LessonLink> LessonLink::parse(const QString& text, int lessonCount, QString* error) {
  const QString trimmed = text.trimmed();
  if (trimmed.size() > 8192) {
    *error = linkTr("the link is %1 characters long: not a ddpscope link").arg(trimmed.size());
    return std::nullopt;
  }
  const QUrl url(trimmed, QUrl::StrictMode);
  if (!url.isValid() || url.scheme().compare(QLatin1String("ddpscope"), Qt::CaseInsensitive) != 0) {
    *error = linkTr("\"%1\" is not a ddpscope link (they start with ddpscope:learn?)").arg(trimmed.left(80));
    return std::nullopt;
  }
  if (url.path() != QLatin1String("learn")) {
    *error = linkTr("the link asks for \"%1\"; this ddpscope opens links to the Learn tab (ddpscope:learn?...)")
                 .arg(url.path().left(40));
    return std::nullopt;
  }
  const QUrlQuery q(url);
  LessonLink link;
  const int sources = int(q.hasQueryItem(QStringLiteral("lesson"))) + int(q.hasQueryItem(QStringLiteral("file"))) +
                      int(q.hasQueryItem(QStringLiteral("run")));
  if (sources != 1) {
    *error =
        linkTr("the link must name one lesson: lesson=N (the Learn menu's), file=PATH.ddplesson or run=PATH.ddprun");
    return std::nullopt;
  }
  if (q.hasQueryItem(QStringLiteral("lesson"))) {
    int n = 0;
    if (!readInt(q, QStringLiteral("lesson"), 1, std::max(1, lessonCount), &n, error)) return std::nullopt;
    link.source = Source::Builtin;
    link.lesson = n - 1;
  } else {
    const bool file = q.hasQueryItem(QStringLiteral("file"));
    link.source = file ? Source::File : Source::Run;
    link.path = q.queryItemValue(file ? QStringLiteral("file") : QStringLiteral("run"), QUrl::FullyDecoded);
    const QString suffix = file ? QStringLiteral(".ddplesson") : QStringLiteral(".ddprun");
    if (!QDir::isAbsolutePath(link.path) || link.path.contains(QChar(0))) {
      *error = linkTr("the link's %1 \"%2\" is not an absolute path").arg(file ? "file" : "run", link.path.left(80));
      return std::nullopt;
    }
    if (!link.path.endsWith(suffix)) {
      *error = linkTr("the link's %1 \"%2\" is not a %3 file").arg(file ? "file" : "run", link.path.left(80), suffix);
      return std::nullopt;
    }
    link.path = QDir::cleanPath(link.path);
  }
  if (!readInt(q, QStringLiteral("step"), 0, 100'000'000, &link.step, error)) return std::nullopt;
  int side = 0, predict = 0;
  if (!readInt(q, QStringLiteral("side"), 0, 1, &side, error)) return std::nullopt;
  if (!readInt(q, QStringLiteral("predict"), 0, 1, &predict, error)) return std::nullopt;
  link.sideBySide = side == 1;
  link.predict = predict == 1;
  if (q.hasQueryItem(QStringLiteral("zoom"))) {
    bool ok = false;
    link.zoom = q.queryItemValue(QStringLiteral("zoom")).toDouble(&ok);
    if (!ok || !std::isfinite(link.zoom) || link.zoom < 0.05 || link.zoom > 20) {  // NaN passes both comparisons
      *error = linkTr("the link's zoom is \"%1\": a scale from 0.05 to 20 is expected")
                   .arg(q.queryItemValue(QStringLiteral("zoom")).left(20));
      return std::nullopt;
    }
  }
  return link;
}

}  // namespace ddpscope::gui
