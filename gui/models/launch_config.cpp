#include "launch_config.h"

#include "ddpscope/default_python.h"
#include "ddpscope/regular_file.h"

#include <QFile>
#include <cmath>
#include <limits>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>
#include <QStandardPaths>
#include <QThread>

namespace ddpscope::gui {
namespace {

// The transformer's head count among the extra arguments (`--heads 8` or `--heads=8`);
// 4, train's default, when absent; 0 when the value is not a positive whole number.
int headsOf(const QStringList& extra) {
  for (qsizetype i = 0; i < extra.size(); ++i) {
    QString value;
    if (extra[i] == QLatin1String("--heads"))
      value = i + 1 < extra.size() ? extra[i + 1] : QString();
    else if (extra[i].startsWith(QLatin1String("--heads=")))
      value = extra[i].mid(8);
    else
      continue;
    bool ok = false;
    const int n = value.toInt(&ok);
    return ok && n >= 1 ? n : 0;
  }
  return 4;
}

// Where the ranks run, for either kind of job: their number and hosts.
QMap<QString, QString> validatePlacement(const LaunchConfig& c) {
  QMap<QString, QString> e;
  if (c.worldSize < 1 || c.worldSize > 256) e[QStringLiteral("world_size")] = QStringLiteral("between 1 and 256 ranks");
  if (!c.hostfile.isEmpty() && !QFileInfo(c.hostfile).isFile())
    e[QStringLiteral("hostfile")] = QStringLiteral("no such file: %1").arg(c.hostfile);
  if (c.hostfile.isEmpty() && c.worldSize > 4 * QThread::idealThreadCount())
    e[QStringLiteral("world_size")] = QStringLiteral("%1 ranks on %2 cores would crawl; use a hostfile or fewer ranks")
                                          .arg(c.worldSize)
                                          .arg(QThread::idealThreadCount());
  return e;
}

// A PyTorch script's job: where it runs, the script and the interpreter.
QMap<QString, QString> validateTorch(const LaunchConfig& c) {
  QMap<QString, QString> e = validatePlacement(c);
  if (c.script.isEmpty())
    e[QStringLiteral("script")] = QStringLiteral("the training script to run");
  else if (!QFileInfo(c.script).isFile())
    e[QStringLiteral("script")] = QStringLiteral("no such file: %1").arg(c.script);
  const bool found = c.python.contains(QLatin1Char('/')) ? QFileInfo(c.python).isExecutable()
                                                         : !QStandardPaths::findExecutable(c.python).isEmpty();
  if (c.python.isEmpty() || !found)
    e[QStringLiteral("python")] = QStringLiteral("not an interpreter that can be run; the path of a python with torch");
  QString splitError;
  splitArguments(c.scriptArguments, &splitError);
  if (!splitError.isEmpty()) e[QStringLiteral("script_arguments")] = splitError;
  return e;
}

QStringList torchrunArguments(const LaunchConfig& c, const QString& runFile, bool check) {
  QStringList a = {QStringLiteral("torchrun"),
                   QStringLiteral("--np"),
                   QString::number(c.worldSize),
                   QStringLiteral("--python"),
                   c.python,
                   QStringLiteral("--progress"),
                   QStringLiteral("json"),
                   QStringLiteral("--out"),
                   runFile};
  if (!c.hostfile.isEmpty()) a << QStringLiteral("--hostfile") << c.hostfile;
  if (check) a << QStringLiteral("--check");
  // "--": the script's name is the script's even when it starts with a dash.
  a << QStringLiteral("--") << c.script << splitArguments(c.scriptArguments, nullptr);
  return a;
}

}  // namespace

QString defaultPython() { return QString::fromStdString(ddpscope::default_python()); }

QMap<QString, QString> validate(const LaunchConfig& c) {
  if (c.job == QLatin1String("torch")) return validateTorch(c);
  QMap<QString, QString> e = validatePlacement(c);
  if (c.job != QLatin1String("train"))
    e[QStringLiteral("job")] = QStringLiteral("choose train (ddpscope's model) or torch (a PyTorch script)");
  if (c.model != QLatin1String("mlp") && c.model != QLatin1String("transformer"))
    e[QStringLiteral("model")] = QStringLiteral("choose mlp or transformer");
  if (c.backend != QLatin1String("mpi") && c.backend != QLatin1String("nccl"))
    e[QStringLiteral("backend")] = QStringLiteral("choose mpi or nccl");
  if (c.iterations < 1) e[QStringLiteral("iterations")] = QStringLiteral("at least 1");
  if (c.batch < 1) e[QStringLiteral("batch")] = QStringLiteral("at least 1 sample per rank");
  if (c.width < 1) e[QStringLiteral("width")] = QStringLiteral("at least 1");
  if (c.depth < 1) e[QStringLiteral("depth")] = QStringLiteral("at least 1");
  if (!(c.bucketCapMb > 0) || c.bucketCapMb > 4096)
    e[QStringLiteral("bucket_cap_mb")] = QStringLiteral("more than 0 and at most 4096 MiB");
  if (!(c.firstBucketCapMb > 0) || c.firstBucketCapMb > 4096)
    e[QStringLiteral("first_bucket_cap_mb")] = QStringLiteral("more than 0 and at most 4096 MiB");
  static const QStringList hooks = {QStringLiteral("allreduce"), QStringLiteral("fp16"), QStringLiteral("bf16"),
                                    QStringLiteral("powersgd")};
  if (!hooks.contains(c.commHook))
    e[QStringLiteral("comm_hook")] = QStringLiteral("choose %1").arg(hooks.join(QStringLiteral(", ")));
  static const QStringList reserved = {
      QStringLiteral("--np"),        QStringLiteral("--out"),           QStringLiteral("--progress"),
      QStringLiteral("--no-probes"), QStringLiteral("--model"),         QStringLiteral("--backend"),
      QStringLiteral("--hostfile"),  QStringLiteral("--iters"),         QStringLiteral("--batch"),
      QStringLiteral("--comm-hook"), QStringLiteral("--bucket-cap-mb"), QStringLiteral("--first-bucket-cap-mb"),
      QStringLiteral("--zero"),      QStringLiteral("--zero-overlap"),  QStringLiteral("--batch-norm"),
      QStringLiteral("--sync-bn")};
  QString splitError;
  const QStringList extra = splitArguments(c.extraArguments, &splitError);
  if (!splitError.isEmpty()) e[QStringLiteral("extra_arguments")] = splitError;
  for (const QString& a : extra) {
    if (reserved.contains(a.section(QLatin1Char('='), 0, 0))) {
      e[QStringLiteral("extra_arguments")] = QStringLiteral("%1 is set by the fields above").arg(a);
      break;
    }
  }
  const int heads = headsOf(extra);
  if (heads < 1)
    e[QStringLiteral("extra_arguments")] = QStringLiteral("--heads takes a whole number from 1");
  else if (c.model == QLatin1String("transformer") && c.width % heads != 0)
    e[QStringLiteral("width")] = QStringLiteral("the transformer's width must be divisible by its %1 heads").arg(heads);
  if (!extra.isEmpty() && !extra.first().startsWith(QLatin1String("--")))
    e[QStringLiteral("extra_arguments")] = QStringLiteral("options start with --, e.g. --lr 0.01");
  if ((c.zero || c.zeroOverlap) && c.fusedOptimizer)
    e[QStringLiteral("fused_optimizer")] =
        QStringLiteral("ZeRO owns the optimizer step: for its step during backward choose ZeRO overlapped with DDP");
  if ((c.batchNorm || c.syncBn) && c.model != QLatin1String("mlp"))
    e[c.syncBn ? QStringLiteral("sync_bn") : QStringLiteral("batch_norm")] =
        QStringLiteral("BatchNorm is added to the mlp; the transformer normalises with LayerNorm");
  if (c.backend == QLatin1String("nccl") && c.hostfile.isEmpty() && c.worldSize > 1)
    e[QStringLiteral("backend")] = QStringLiteral("nccl needs a GPU per rank: one rank on this machine, or a hostfile");
  return e;
}

QJsonObject toJson(const LaunchConfig& c) {
  return {{QStringLiteral("job"), c.job},
          {QStringLiteral("script"), c.script},
          {QStringLiteral("python"), c.python},
          {QStringLiteral("script_arguments"), c.scriptArguments},
          {QStringLiteral("model"), c.model},
          {QStringLiteral("world_size"), c.worldSize},
          {QStringLiteral("hostfile"), c.hostfile},
          {QStringLiteral("backend"), c.backend},
          {QStringLiteral("iterations"), c.iterations},
          {QStringLiteral("batch"), c.batch},
          {QStringLiteral("width"), c.width},
          {QStringLiteral("depth"), c.depth},
          {QStringLiteral("bucket_cap_mb"), c.bucketCapMb},
          {QStringLiteral("first_bucket_cap_mb"), c.firstBucketCapMb},
          {QStringLiteral("find_unused_parameters"), c.findUnusedParameters},
          {QStringLiteral("gradient_as_bucket_view"), c.gradientAsBucketView},
          {QStringLiteral("static_graph"), c.staticGraph},
          {QStringLiteral("fused_optimizer"), c.fusedOptimizer},
          {QStringLiteral("zero"), c.zero},
          {QStringLiteral("zero_overlap"), c.zeroOverlap},
          {QStringLiteral("batch_norm"), c.batchNorm},
          {QStringLiteral("sync_bn"), c.syncBn},
          {QStringLiteral("comm_hook"), c.commHook},
          {QStringLiteral("probes"), c.probes},
          {QStringLiteral("extra_arguments"), c.extraArguments}};
}

namespace {

// Reads json[key] into *out when present; false (with *error) when it has the wrong type.
template <typename T>
bool read(const QJsonObject& json, const char* key, T* out, QString* error) {
  const QJsonValue v = json.value(QLatin1String(key));
  if (v.isUndefined()) return true;
  bool ok = false;
  if constexpr (std::is_same_v<T, QString>) {
    ok = v.isString();
    if (ok) *out = v.toString();
  } else if constexpr (std::is_same_v<T, bool>) {
    ok = v.isBool();
    if (ok) *out = v.toBool();
  } else if constexpr (std::is_same_v<T, int>) {
    // In range before the cast: a double beyond int's range does not convert (UB).
    const double d = v.toDouble();
    ok = v.isDouble() && d >= std::numeric_limits<int>::min() && d <= std::numeric_limits<int>::max() &&
         d == std::trunc(d);
    if (ok) *out = static_cast<int>(d);
  } else {
    ok = v.isDouble();
    if (ok) *out = v.toDouble();
  }
  if (!ok && error) {
    *error = QStringLiteral("'%1' has the wrong type (expected %2)")
                 .arg(QLatin1String(key), std::is_same_v<T, QString> ? QStringLiteral("text")
                                          : std::is_same_v<T, bool>  ? QStringLiteral("true or false")
                                          : std::is_same_v<T, int>   ? QStringLiteral("a whole number")
                                                                     : QStringLiteral("a number"));
  }
  return ok;
}

}  // namespace

LaunchConfig launchConfigFromJson(const QJsonObject& j, QString* error) {
  LaunchConfig c;
  if (error) error->clear();
  read(j, "job", &c.job, error) && read(j, "script", &c.script, error) && read(j, "python", &c.python, error) &&
      read(j, "script_arguments", &c.scriptArguments, error) && read(j, "model", &c.model, error) &&
      read(j, "world_size", &c.worldSize, error) && read(j, "hostfile", &c.hostfile, error) &&
      read(j, "backend", &c.backend, error) && read(j, "iterations", &c.iterations, error) &&
      read(j, "batch", &c.batch, error) && read(j, "width", &c.width, error) && read(j, "depth", &c.depth, error) &&
      read(j, "bucket_cap_mb", &c.bucketCapMb, error) && read(j, "first_bucket_cap_mb", &c.firstBucketCapMb, error) &&
      read(j, "find_unused_parameters", &c.findUnusedParameters, error) &&
      read(j, "gradient_as_bucket_view", &c.gradientAsBucketView, error) &&
      read(j, "static_graph", &c.staticGraph, error) && read(j, "fused_optimizer", &c.fusedOptimizer, error) &&
      read(j, "zero", &c.zero, error) && read(j, "zero_overlap", &c.zeroOverlap, error) &&
      read(j, "batch_norm", &c.batchNorm, error) && read(j, "sync_bn", &c.syncBn, error) &&
      read(j, "comm_hook", &c.commHook, error) && read(j, "probes", &c.probes, error) &&
      read(j, "extra_arguments", &c.extraArguments, error);
  // A misspelt setting would otherwise be dropped without a word.
  const QJsonObject known = toJson(LaunchConfig{});
  for (auto it = j.begin(); it != j.end() && error && error->isEmpty(); ++it) {
    if (!known.contains(it.key())) {
      *error = QStringLiteral("unknown setting '%1'; a preset holds %2")
                   .arg(it.key().left(60), known.keys().join(QStringLiteral(", ")));
    }
  }
  return c;
}

bool savePreset(const LaunchConfig& config, const QString& path, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  f.write(QJsonDocument(toJson(config)).toJson());
  if (!f.flush()) {
    *error = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

bool loadPreset(const QString& path, LaunchConfig* config, QString* error) {
  // A pipe or a device would block or never end (ddpscope/regular_file.h).
  if (const std::string why = why_not_regular_file(path.toStdString(), "preset", kMaxPresetBytes);
      QFileInfo::exists(path) && !why.empty()) {
    *error = QString::fromStdString(why);
    return false;
  }
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    *error = QStringLiteral("cannot read %1: %2").arg(path, f.errorString());
    return false;
  }
  QString why;
  if (!presetFromBytes(f.read(kMaxPresetBytes + 1), config, &why)) {
    *error = QStringLiteral("%1: %2").arg(path, why);
    return false;
  }
  return true;
}

bool presetFromBytes(const QByteArray& bytes, LaunchConfig* config, QString* error) {
  if (bytes.size() > kMaxPresetBytes) {
    *error = QStringLiteral("larger than a preset can be (%1 KiB); not a preset").arg(kMaxPresetBytes / 1024);
    return false;
  }
  QJsonParseError parse;
  const QJsonDocument doc = QJsonDocument::fromJson(bytes, &parse);
  if (!doc.isObject()) {
    *error = QStringLiteral("not a preset (a JSON object): %1")
                 .arg(parse.error ? parse.errorString() : QStringLiteral("not an object"));
    return false;
  }
  QString why;
  LaunchConfig c = launchConfigFromJson(doc.object(), &why);
  if (!why.isEmpty()) {
    *error = why;
    return false;
  }
  *config = c;
  return true;
}

QStringList splitArguments(const QString& text, QString* error) {
  QStringList words;
  QString word;
  bool inWord = false;
  QChar quote;  // the open quote, or null
  for (qsizetype i = 0; i < text.size(); ++i) {
    const QChar ch = text[i];
    if (quote == QLatin1Char('\'')) {
      if (ch == quote)
        quote = QChar();
      else
        word += ch;  // nothing is special inside '...'
    } else if (quote == QLatin1Char('"')) {
      if (ch == quote) {
        quote = QChar();
      } else if (ch == QLatin1Char('\\') && i + 1 < text.size() && QStringLiteral("\"\\$`").contains(text[i + 1])) {
        word += text[++i];
      } else {
        word += ch;
      }
    } else if (ch == QLatin1Char('\'') || ch == QLatin1Char('"')) {
      quote = ch;
      inWord = true;
    } else if (ch == QLatin1Char('\\') && i + 1 < text.size()) {
      word += text[++i];
      inWord = true;
    } else if (ch.isSpace()) {
      if (inWord) words << word;
      word.clear();
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (!quote.isNull() && error) *error = QStringLiteral("a %1 quote is not closed").arg(quote);
  if (inWord) words << word;
  return words;
}

QStringList trainArguments(const LaunchConfig& c, const QString& runFile, bool check) {
  if (c.job == QLatin1String("torch")) return torchrunArguments(c, runFile, check);
  QStringList a = {QStringLiteral("train"),
                   QStringLiteral("--np"),
                   QString::number(c.worldSize),
                   QStringLiteral("--backend"),
                   c.backend,
                   QStringLiteral("--model"),
                   c.model,
                   QStringLiteral("--iters"),
                   QString::number(c.iterations),
                   QStringLiteral("--batch"),
                   QString::number(c.batch),
                   QStringLiteral("--width"),
                   QString::number(c.width),
                   QStringLiteral("--depth"),
                   QString::number(c.depth),
                   QStringLiteral("--bucket-cap-mb"),
                   QString::number(c.bucketCapMb, 'g', 17),
                   QStringLiteral("--first-bucket-cap-mb"),
                   QString::number(c.firstBucketCapMb, 'g', 17),
                   QStringLiteral("--comm-hook"),
                   c.commHook,
                   QStringLiteral("--progress"),
                   QStringLiteral("json")};
  if (!c.hostfile.isEmpty()) a << QStringLiteral("--hostfile") << c.hostfile;
  if (c.findUnusedParameters) a << QStringLiteral("--find-unused-parameters");
  if (c.gradientAsBucketView) a << QStringLiteral("--gradient-as-bucket-view");
  if (c.staticGraph) a << QStringLiteral("--static-graph");
  if (c.fusedOptimizer) a << QStringLiteral("--fused-optimizer");
  if (c.zeroOverlap)
    a << QStringLiteral("--zero-overlap");
  else if (c.zero)
    a << QStringLiteral("--zero");
  if (c.syncBn)
    a << QStringLiteral("--sync-bn");
  else if (c.batchNorm)
    a << QStringLiteral("--batch-norm");
  a << splitArguments(c.extraArguments, nullptr);
  if (c.probes) {
    a << QStringLiteral("--out") << runFile;
  } else {
    a << QStringLiteral("--no-probes");
  }
  if (check) a << QStringLiteral("--check");
  return a;
}

}  // namespace ddpscope::gui
