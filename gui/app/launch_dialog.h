// LaunchDialog: the options of a training job: ddpscope's own model (model, world size,
// hosts, backend, iterations, batch, DDP options, comm hook, probes) or a PyTorch script
// run unchanged (the script, its arguments, the interpreter, world size, hosts); the
// rows of the other kind are hidden. What is wrong with a field is
// said next to it, and Launch stays disabled until nothing is. Presets save and load as
// JSON files.
#pragma once

#include <QDialog>
#include <QMap>
#include <functional>

#include "launch_config.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QDoubleSpinBox;
class QGridLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace ddpscope::gui {

class LaunchDialog : public QDialog {
  Q_OBJECT

 public:
  // QSettings key of the last launched job's config (JSON).
  static constexpr const char* kLastConfigKey = "launch/last";
  explicit LaunchDialog(QWidget* parent = nullptr);

  LaunchConfig config() const;
  void setConfig(const LaunchConfig& config);
  // The message shown next to `field` (the JSON key), empty when it is fine.
  QString errorText(const QString& field) const;
  bool canLaunch() const;
  // Asked when Launch is pressed (the app asks ddpscope-cli for a dry run): an error keeps
  // the dialog open and shows it beside the extra arguments, where the fields' own checks
  // cannot reach.
  void setLaunchCheck(std::function<QString(const LaunchConfig&)> check) { m_check = std::move(check); }

  // Presets: false with the reason shown in the dialog when it fails.
  bool savePresetTo(const QString& path);
  bool loadPresetFrom(const QString& path);

  // Widgets, for tests that type into them.
  QSpinBox* worldSizeBox() const { return m_worldSize; }
  QLineEdit* hostfileEdit() const { return m_hostfile; }
  QComboBox* modelBox() const { return m_model; }
  QSpinBox* widthBox() const { return m_width; }
  QComboBox* backendBox() const { return m_backend; }
  QLineEdit* extraArgumentsEdit() const { return m_extra; }
  QComboBox* jobBox() const { return m_job; }
  QLineEdit* scriptEdit() const { return m_script; }
  QLineEdit* pythonEdit() const { return m_python; }
  // Whether the row of `field` (the JSON key) is shown for the job kind chosen.
  bool rowShown(const QString& field) const;

 private:
  void addKindRow();
  void addScriptRows();
  void addJobRows();
  void showRowsOfKind();
  QWidget* fileRow(QLineEdit* edit, const QString& title);
  void addDdpRows();
  QDialogButtonBox* buildButtons();
  void revalidateOnEdits();
  void restoreLastConfig();
  void revalidate();
  QLabel* addRow(const QString& field, const QString& label, QWidget* editor);

  QComboBox* m_job;
  QLineEdit* m_script;
  QLineEdit* m_python;
  QLineEdit* m_scriptArguments;
  QComboBox* m_model;
  QSpinBox* m_worldSize;
  QLineEdit* m_hostfile;
  QComboBox* m_backend;
  QSpinBox* m_iterations;
  QSpinBox* m_batch;
  QSpinBox* m_width;
  QSpinBox* m_depth;
  QDoubleSpinBox* m_bucketCap;
  QDoubleSpinBox* m_firstBucketCap;
  QCheckBox* m_findUnused;
  QCheckBox* m_bucketView;
  QCheckBox* m_staticGraph;
  QCheckBox* m_fusedOptimizer;
  QCheckBox* m_zero;
  QCheckBox* m_zeroOverlap;
  QCheckBox* m_batchNorm;
  QCheckBox* m_syncBn;
  QComboBox* m_commHook;
  QCheckBox* m_probes;
  QLineEdit* m_extra;
  QLabel* m_status;
  QString m_restoreNote;  // what restoring the last job left out (its fault injections)
  std::function<QString(const LaunchConfig&)> m_check;
  QDialogButtonBox* m_buttons;
  QMap<QString, QLabel*> m_errors;
  QMap<QString, QList<QWidget*>> m_rows;  // field -> its label, editor and error
  QGridLayout* m_grid;
};

}  // namespace ddpscope::gui
