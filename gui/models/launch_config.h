// LaunchConfig: what the launch dialog asks for, its validation (a message per field,
// shown next to the field), its JSON form for presets, and the `ddpscope-cli train`
// arguments that start it. Plain Qt Core, so tests check it without a window.
#pragma once

#include <QJsonObject>
#include <QMap>
#include <QString>
#include <QStringList>

namespace ddpscope::gui {

// /usr/bin/python3 when it exists (Debian's python3-torch), else python3 on PATH: what
// `ddpscope-cli torchrun` uses by default.
QString defaultPython();

struct LaunchConfig {
  // "train": ddpscope's own model (ddpscope-cli train); "torch": a PyTorch script, run
  // unchanged as torchrun would (ddpscope-cli torchrun).
  QString job = QStringLiteral("train");
  QString script;                         // torch: the script
  QString python = defaultPython();       // torch: the interpreter (any python with torch)
  QString scriptArguments;                // torch: the script's own arguments, as typed
  QString model = QStringLiteral("mlp");  // mlp | transformer
  int worldSize = 2;
  QString hostfile;                         // empty: every rank on this machine
  QString backend = QStringLiteral("mpi");  // mpi | nccl
  int iterations = 200;
  int batch = 32;
  int width = 256;  // MLP hidden width / transformer d_model
  int depth = 4;    // MLP layers / transformer blocks
  double bucketCapMb = 25;
  double firstBucketCapMb = 1;  // PyTorch's default: the first allreduce starts early
  bool findUnusedParameters = false;
  bool gradientAsBucketView = false;
  bool staticGraph = false;
  bool fusedOptimizer = false;  // DDP steps each bucket's parameters once it is reduced
  bool zero = false;            // ZeroRedundancyOptimizer: each rank keeps its shard's optimizer state
  bool zeroOverlap = false;     // ZeRO's shard steps in DDP's bucket hook (implies zero)
  bool batchNorm = false;       // MLP: BatchNorm1d after each hidden Linear
  bool syncBn = false;          // ... as SyncBatchNorm (implies batchNorm)
  QString commHook = QStringLiteral("allreduce");  // allreduce | fp16 | bf16 | powersgd
  bool probes = true;
  // More `ddpscope-cli train` options, as typed on a command line ("--lr 0.01
  // --inject-stall 1:5:30"); the ones the dialog sets itself are refused.
  QString extraArguments;
};

// Field name (as in the JSON form) -> what is wrong with it; empty when the config is valid.
QMap<QString, QString> validate(const LaunchConfig& config);

QJsonObject toJson(const LaunchConfig& config);
// Missing keys keep their defaults; a key of the wrong type is an error.
LaunchConfig launchConfigFromJson(const QJsonObject& json, QString* error);

// Presets: one JSON file each. Return false with *error set on failure.
bool savePreset(const LaunchConfig& config, const QString& path, QString* error);
bool loadPreset(const QString& path, LaunchConfig* config, QString* error);
// A preset's bytes (what loadPreset reads; the fuzz harness's entry). Presets are a few
// hundred bytes: anything past kMaxPresetBytes is refused unread.
inline constexpr qsizetype kMaxPresetBytes = 1 << 20;
bool presetFromBytes(const QByteArray& bytes, LaunchConfig* config, QString* error);

// Extra arguments as a POSIX shell would split them into words ('...', "...", \),
// without running anything: $(...), backquotes and ; are plain characters. An unclosed
// quote sets *error (when given).
QStringList splitArguments(const QString& text, QString* error);

// The arguments of `ddpscope-cli` that run `config` and write `runFile`, with
// machine-readable progress (`train ...` or `torchrun ... SCRIPT ARGS`). `check`: the
// same, only checked (--check, before the script's own arguments).
QStringList trainArguments(const LaunchConfig& config, const QString& runFile, bool check = false);

}  // namespace ddpscope::gui
