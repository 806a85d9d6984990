// MessagesPage: the "Messages" tab, the send/recv view (SequenceView) of the run with its
// filters above it: context (with the workers each touched), worker, and message kinds.
#pragma once

#include <QWidget>
#include <array>
#include <memory>

#include "run_data.h"
#include "sequence_view.h"
#include "run_page.h"

class QCheckBox;
class QComboBox;
class QLabel;

namespace ddpscope::gui {

class MessagesPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit MessagesPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  std::optional<QString> whyEmpty(const RunData* run) const override;
  // `sameRun`: a live reload of the run shown, which keeps the filters and the window.
  void setRun(const std::shared_ptr<const RunData>& run, bool sameRun);
  SequenceView* view() const { return m_view; }
  QComboBox* contextBox() const { return m_context; }
  QComboBox* workerBox() const { return m_worker; }
  QCheckBox* kindBox(ArrowKind kind) const { return m_kinds[static_cast<size_t>(kind)]; }

 private:
  void applyFilter();

  SequenceView* m_view = nullptr;
  QComboBox* m_context = nullptr;
  QComboBox* m_worker = nullptr;
  std::array<QCheckBox*, kNumArrowKinds> m_kinds{};
  QLabel* m_counts = nullptr;
};

}  // namespace ddpscope::gui
