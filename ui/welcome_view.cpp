// WelcomeView: machine facts, recommended starters as cards, and the download's progress.
#include "welcome_view.h"

#include "services/device_probe.h"

#include "services/memory_estimate.h"
#include "services/starter_install.h"

#include <QApplication>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>

namespace hearth::ui {


WelcomeView::WelcomeView(app::StarterInstall* install, app::DeviceProbe* devices, QWidget* parent)
    : QWidget(parent), m_install(install) {
    auto* inner = new QWidget(this);
    auto* layout = new QVBoxLayout(inner);
    layout->setContentsMargins(32, 24, 32, 24);
    auto* title = new QLabel(tr("<h1>Welcome to Hearth</h1>"), inner);
    auto* intro = new QLabel(tr("Hearth runs AI models on this computer. What you type never leaves it. "
                                "Pick a model to start: it downloads once, then works offline."),
                             inner);
    intro->setWordWrap(true);
    m_machine = new QLabel(tr("Looking at this computer…"), inner);
    m_machine->setWordWrap(true);
    m_machine->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* recommendedTitle = new QLabel(tr("<h3>Recommended for this computer</h3>"), inner);
    m_cards = new QVBoxLayout();
    m_cards->setSpacing(8);
    m_status = new QLabel(inner);
    m_status->setWordWrap(true);
    m_progress = new QProgressBar(inner);
    m_progress->setVisible(false);
    auto* open = new QPushButton(tr("I have a model file… (Ctrl+O)"), inner);
    auto* browse = new QPushButton(tr("Browse all models"), inner);
    auto* skip = new QPushButton(tr("Skip for now"), inner);
    auto* row = new QHBoxLayout();
    row->addWidget(open);
    row->addWidget(browse);
    row->addStretch(1);
    row->addWidget(skip);
    layout->addWidget(title);
    layout->addWidget(intro);
    layout->addSpacing(8);
    layout->addWidget(m_machine);
    layout->addWidget(recommendedTitle);
    layout->addLayout(m_cards);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addStretch(1);
    layout->addLayout(row);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(inner);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);

    connect(open, &QPushButton::clicked, this, &WelcomeView::openFileRequested);
    connect(browse, &QPushButton::clicked, this, &WelcomeView::browseRequested);
    connect(skip, &QPushButton::clicked, this, &WelcomeView::dismissed);
    connect(m_install, &app::StarterInstall::progress, this, [this](const QString& stage, qint64 got, qint64 total) {
        m_progress->setVisible(true);
        if (total > 0) {
            m_progress->setRange(0, 1000);
            m_progress->setValue(int(1000.0 * double(got) / double(total)));
            m_progress->setFormat(QStringLiteral("%1 — %2 of %3")
                                      .arg(stage, QLocale().formattedDataSize(got, 1), QLocale().formattedDataSize(total, 1)));
        } else {
            m_progress->setRange(0, 0);
            m_progress->setFormat(stage);
        }
        m_status->setText(tr("%1: %2…").arg(m_install->starter().title, stage));
    });
    connect(m_install, &app::StarterInstall::finished, this, [this](const QString&) {
        m_progress->setVisible(false);
        m_status->setText(tr("%1 is ready: loading it…").arg(m_install->starter().title));
        for (QPushButton* b : m_buttons) b->setEnabled(true);
    });
    connect(m_install, &app::StarterInstall::failed, this, [this](const QString& message) {
        m_progress->setVisible(false);
        m_status->setText(tr("<b>Could not download %1:</b> %2").arg(m_install->starter().title.toHtmlEscaped(),
                                                                     message.toHtmlEscaped()));
        for (QPushButton* b : m_buttons) b->setEnabled(true);
    });

    if (!devices) devices = new app::DeviceProbe(this);
    devices->whenReady(this, [this, devices] {
        if (!m_haveMachine) setMachine(devices->devices(), devices->availableRamBytes());
    });
}

WelcomeView::~WelcomeView() = default;

void WelcomeView::setMachine(const DeviceList& devices, qint64 availableRamBytes) {
    m_devices = devices;
    m_ram = availableRamBytes;
    m_haveMachine = true;
    QLocale l;
    QStringList gpus;
    for (const DeviceDescription& d : devices.devices)
        if (d.kind != DeviceKind::Cpu)
            gpus << tr("%1 (%2, %3)").arg(QString::fromStdString(d.name), QString::fromStdString(d.id),
                                          d.sharesHostMemory ? tr("shares RAM") : l.formattedDataSize(qint64(d.totalMemory), 1));
    const qint64 total = app::totalRamBytes();
    m_machine->setText(tr("<b>This computer:</b> %1 CPU threads · %2 RAM (%3 free) · %4")
                           .arg(QThread::idealThreadCount())
                           .arg(total > 0 ? l.formattedDataSize(total, 1) : tr("unknown"),
                                l.formattedDataSize(availableRamBytes, 1),
                                gpus.isEmpty() ? tr("no GPU found: models run on the CPU")
                                               : tr("GPU: %1").arg(gpus.join(QStringLiteral("; ")).toHtmlEscaped())));
    rebuildCards();
}

void WelcomeView::setStarters(const QList<app::StarterModel>& starters) {
    m_starters = starters;
    rebuildCards();
}

QString WelcomeView::machineText() const { return m_machine->text(); }

void WelcomeView::rebuildCards() {
    while (QLayoutItem* item = m_cards->takeAt(0)) {
        if (QWidget* w = item->widget()) w->deleteLater();
        delete item;
    }
    m_buttons.clear();
    if (!m_haveMachine) return;
    m_recommended = app::recommendedStarters(m_starters, m_devices, m_ram);
    if (m_recommended.isEmpty()) {
        auto* none = new QLabel(tr("None of the starter models fits the memory free right now. Close other "
                                   "programs, or browse the hub for a smaller model."),
                                this);
        none->setWordWrap(true);
        m_cards->addWidget(none);
        return;
    }
    QLocale l;
    for (int i = 0; i < m_recommended.size(); ++i) {
        const app::StarterModel& s = m_recommended[i];
        auto* card = new QFrame(this);
        card->setFrameShape(QFrame::StyledPanel);
        auto* row = new QHBoxLayout(card);
        auto* text = new QLabel(tr("<b>%1</b> &nbsp; %2 parameters · %3 · %4<br>%5<br><small>License: %6 · %7</small>")
                                    .arg(s.title.toHtmlEscaped(), s.parameters.toHtmlEscaped(), s.quantization,
                                         l.formattedDataSize(s.approxSizeBytes, 1), s.notes.toHtmlEscaped(),
                                         s.license.toHtmlEscaped(), s.repo.toHtmlEscaped()),
                                card);
        text->setWordWrap(true);
        // Every card offers the same: its model downloaded, loaded and a chat opened.
        auto* button = new QPushButton(tr("Download and chat"), card);
        if (i == 0) button->setDefault(true);
        row->addWidget(text, 1);
        row->addWidget(button);
        m_cards->addWidget(card);
        m_buttons << button;
        connect(button, &QPushButton::clicked, this, [this, i] { installRecommended(i); });
    }
}

void WelcomeView::installRecommended(int index) {
    if (index < 0 || index >= m_recommended.size() || m_install->isBusy()) return;
    for (QPushButton* b : m_buttons) b->setEnabled(false);
    m_install->start(m_recommended[index]);
}

} // namespace hearth::ui
