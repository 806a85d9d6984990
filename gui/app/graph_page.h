// GraphPage: an autograd graph of the run: rank 0's local graph of one iteration, or a
// pass of a distributed autograd context (read from the run file when picked: a run
// may hold many), optionally collapsed by module.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>

#include "run_data.h"
#include "run_page.h"

class QCheckBox;
class QComboBox;

namespace ddpscope::probes {
class RunStoreReader;
}

namespace ddpscope::gui {

class EmptyState;
class GraphView;

class GraphPage : public QWidget, public RunPage {
  Q_OBJECT

 public:
  // Gives the open run's reader, or throws saying why there is none.
  using ReaderSource = std::function<probes::RunStoreReader&()>;
  void showRun(const ShownRun& shown) override;
  std::optional<QString> whyEmpty(const RunData* run) const override;
  explicit GraphPage(ReaderSource reader, QWidget* parent = nullptr);
  // Shows `run`'s graphs; `keepChoice`: a live reload keeps the graph picked.
  void setRun(std::shared_ptr<const RunData> run, bool keepChoice);
  EmptyState* emptyState() const { return m_empty; }
  GraphView* view() const { return m_graph; }
  QComboBox* choice() const { return m_choice; }

 signals:
  void statusMessage(const QString& text);

 private:
  void showChosen();

  ReaderSource m_reader;
  std::shared_ptr<const RunData> m_run;
  QComboBox* m_choice = nullptr;
  QCheckBox* m_collapse = nullptr;
  GraphView* m_graph = nullptr;
  EmptyState* m_empty = nullptr;
};

}  // namespace ddpscope::gui
