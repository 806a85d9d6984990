#include "lesson_transport.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>

#include "lesson_player.h"

namespace ddpscope::gui {

LessonTransport::LessonTransport(LessonPlayer* player, QWidget* parent) : QWidget(parent) {
  auto* controls = new QHBoxLayout(this);
  controls->setContentsMargins(0, 0, 0, 0);
  auto button = [&](const QString& text, const QString& tip, auto slot) {
    auto* b = new QPushButton(text);
    b->setToolTip(tip);
    b->setFocusPolicy(Qt::NoFocus);
    connect(b, &QPushButton::clicked, player, slot);
    controls->addWidget(b);
    return b;
  };
  button(tr("|<"), tr("To the start (Home)"), [player] { player->toStart(); });
  button(tr("<"), tr("One step back (Left)"), [player] { player->stepBack(); });
  m_play = button(tr("Play"), tr("Play or pause (Space)"), [player] { player->setPlaying(!player->isPlaying()); });
  button(tr(">"), tr("One step forward (Right)"), [player] { player->stepForward(); });
  button(tr(">|"), tr("To the end (End)"), [player] { player->toEnd(); });
  connect(player, &LessonPlayer::playingChanged, m_play,
          [this](bool playing) { m_play->setText(playing ? tr("Pause") : tr("Play")); });
  controls->addSpacing(16);
  controls->addWidget(new QLabel(tr("Speed")));
  auto* speed = new QSlider(Qt::Horizontal);
  speed->setRange(1, 20);  // half-steps per second
  speed->setValue(4);
  speed->setFocusPolicy(Qt::NoFocus);
  connect(speed, &QSlider::valueChanged, player, [player](int v) { player->setStepsPerSecond(v / 2.0); });
  player->setStepsPerSecond(speed->value() / 2.0);
  controls->addWidget(speed);
  controls->addStretch();
  // A link to this step (lesson_link.h), for a chat or the course page: it opens the same
  // lesson, step and view in another ddpscope.
  auto* link = new QPushButton(tr("Copy link"));
  link->setToolTip(tr("Copy a link to this step (Ctrl+Shift+C); ddpscope opens it at the same step and view"));
  link->setFocusPolicy(Qt::NoFocus);
  connect(link, &QPushButton::clicked, this, &LessonTransport::copyLinkClicked);
  controls->addWidget(link);
}

}  // namespace ddpscope::gui
