// libFuzzer harness of the launch dialog's job presets (gui/models/launch_config.h):
// the bytes of a preset file. Any input must load or be refused with a reason; never
// crash or hang. A preset that loads must survive a save and load unchanged, and the
// arguments it starts a job with must keep the run file the dialog chose: whatever the
// extra arguments say, they never add a second --out (validate() refuses those), and
// without probes there is none.
#include <QByteArray>
#include <QJsonDocument>
#include <QString>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "launch_config.h"

using namespace ddpscope::gui;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  LaunchConfig config;
  QString error;
  const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
  if (!presetFromBytes(bytes, &config, &error)) {
    if (error.isEmpty()) std::abort();  // refused without saying why
    return 0;
  }
  const QByteArray saved = QJsonDocument(toJson(config)).toJson();
  LaunchConfig again;
  if (!presetFromBytes(saved, &again, &error) || toJson(again) != toJson(config)) std::abort();
  if (validate(config).isEmpty()) {
    const QStringList args = trainArguments(config, QStringLiteral("chosen.ddprun"));
    if (args.count(QStringLiteral("--out")) != (config.probes ? 1 : 0)) std::abort();
  }
  return 0;
}
