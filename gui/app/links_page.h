// LinksPage: the links between ranks and hosts. A headline with the slow-link
// verdict and the ring's measured ceiling, and the heat map of every ordered pair
// (link_matrix_view.h) by measured rate, achieved rate or bytes moved, between ranks or
// hosts. A run with no traffic between named pairs and no link test says so and how to
// measure its links.
#pragma once

#include <QWidget>
#include <memory>

#include "run_page.h"

class QComboBox;
class QLabel;

namespace ddpscope::gui {

struct RunData;
class EmptyState;
class LinkMatrixView;

class LinksPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  explicit LinksPage(QWidget* parent = nullptr);
  void showRun(const ShownRun& shown) override;
  std::optional<QString> whyEmpty(const RunData* run) const override;
  void setRun(std::shared_ptr<const RunData> run);
  LinkMatrixView* view() const { return m_view; }
  QComboBox* measureBox() const { return m_measure; }
  QComboBox* levelBox() const { return m_level; }
  QString headline() const;
  EmptyState* emptyState() const { return m_empty; }

 private:
  void rebuild();
  void fillMeasures();

  std::shared_ptr<const RunData> m_run;
  QComboBox* m_measure = nullptr;
  QComboBox* m_level = nullptr;
  QLabel* m_headline = nullptr;
  LinkMatrixView* m_view = nullptr;
  EmptyState* m_empty = nullptr;
};

}  // namespace ddpscope::gui
