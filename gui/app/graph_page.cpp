#include "graph_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>

#include "empty_state.h"
#include "graph_view.h"
#include "user_message.h"

namespace ddpscope::gui {

GraphPage::GraphPage(ReaderSource reader, QWidget* parent) : QWidget(parent), m_reader(std::move(reader)) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  m_choice = new QComboBox;
  m_choice->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  bar->addWidget(new QLabel(tr("Graph")));
  bar->addWidget(m_choice);
  m_collapse = new QCheckBox(tr("Collapse by module"));
  bar->addWidget(m_collapse);
  bar->addStretch();
  layout->addLayout(bar);
  connect(m_choice, &QComboBox::currentIndexChanged, this, [this] { showChosen(); });
  m_graph = new GraphView;
  m_empty = new EmptyState(m_graph);
  layout->addWidget(m_empty, 1);
  connect(m_collapse, &QCheckBox::toggled, m_graph, &GraphView::setCollapsed);
  connect(m_graph, &GraphView::nodeClicked, this, &GraphPage::statusMessage);
}

// The choices: rank 0's local graph (when recorded), then every pass of a distributed
// autograd context, by context.
void GraphPage::setRun(std::shared_ptr<const RunData> run, bool keepChoice) {
  m_run = std::move(run);
  const int previous = m_choice->count();
  const QSignalBlocker block(m_choice);
  const QString current = m_choice->currentText();
  m_choice->clear();
  // A run with no graph (a PyTorch job, imported dumps) gets one choice that says so, not
  // "iteration -1".
  if (!m_run->graph.nodes.empty()) {
    m_choice->addItem(
        m_run->graph.iteration >= 0 ? tr("rank 0 · iteration %1").arg(m_run->graph.iteration) : tr("rank 0"), -1);
  } else if (m_run->dist_graphs.empty()) {
    m_choice->addItem(tr("no graph recorded"), -1);
  }
  for (size_t i = 0; i < m_run->dist_graphs.size(); ++i)
    m_choice->addItem(QString::fromStdString(describeChoice(m_run->dist_graphs[i])), static_cast<int>(i));
  const int keep = keepChoice ? m_choice->findText(current) : -1;
  m_choice->setCurrentIndex(std::max(0, keep));
  if (keep < 0 || previous == 0 || m_graph->shown().nodes.empty()) showChosen();
}

void GraphPage::showChosen() {
  if (!m_run) return;
  const int choice = m_choice->currentData().isValid() ? m_choice->currentData().toInt() : -1;
  if (choice < 0 || choice >= static_cast<int>(m_run->dist_graphs.size())) {
    m_graph->setGraph(m_run->graph);
  } else {
    try {
      const GraphChoice& c = m_run->dist_graphs[static_cast<size_t>(choice)];
      m_graph->setGraph(loadDistGraph(m_reader(), c.ctx_id, c.pass));
    } catch (const std::exception& e) {
      emit statusMessage(tr("Could not read that graph: %1").arg(userMessage(e)));
      return;
    }
  }
  const QSignalBlocker g(m_collapse);
  m_collapse->setChecked(m_graph->collapsed());
}

void GraphPage::showRun(const ShownRun& shown) { setRun(shown.run, shown.sameRun); }

std::optional<QString> GraphPage::whyEmpty(const RunData* run) const {
  if (!run) return noRunOpen();
  if (!run->graph.nodes.empty() || !run->dist_graphs.empty()) return QString();
  return tr(
      "No autograd graph was recorded in this run.\n\nTraining jobs record the graph "
      "of their first iteration; distributed-autograd examples (ddpscope-cli example) "
      "record each pass.");
}

}  // namespace ddpscope::gui
