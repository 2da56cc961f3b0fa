// Main window, what the user is told: the status bar (the engine's state, load progress, live
// statistics, passing lines), notifications for warnings and errors, and the pages' messages and
// the engine's events routed to them.
#include "main_window.h"

#include "chat_view.h"
#include "count_text.h"
#include "model_info_view.h"
#include "models_view.h"
#include "notification_area.h"
#include "server_view.h"

#include "services/engine_host.h"
#include "services/remote_provider.h"
#include "services/settings.h"

#include <QFileInfo>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QStatusBar>

namespace hearth::ui {

// The status bar's labels and the pages' messages to it.
void MainWindow::buildStatusBar() {
    m_engineState = new QLabel(tr("No model loaded"), this);
    m_stats = new QLabel(this);
    m_loadBar = new QProgressBar(this);
    m_loadBar->setRange(0, 1000);
    m_loadBar->setMaximumWidth(220);
    m_loadBar->setVisible(false);
    statusBar()->addWidget(m_stats, 1);
    statusBar()->addPermanentWidget(m_loadBar);
    statusBar()->addPermanentWidget(m_engineState);
    connect(m_chat, &ChatView::statusMessage, this, &MainWindow::showStatus);
    connect(m_models, &ModelsView::statusMessage, this, &MainWindow::showStatus);
    connect(m_server, &ServerView::statusMessage, this, &MainWindow::showStatus);
    connect(m_info, &ModelInfoView::statusChanged, this, &MainWindow::showStatus);
    connect(m_chat, &ChatView::statusWithdrawn, this, &MainWindow::withdrawStatus);
    connect(m_models, &ModelsView::statusWithdrawn, this, &MainWindow::withdrawStatus);
}

void MainWindow::connectEngine() {
    connect(m_engine, &app::EngineHost::stateChanged, this, [this](app::EngineHost::State s) {
        if (s == app::EngineHost::State::Loading) {
            m_engineState->setText(tr("Loading model…"));
            m_loadBar->setValue(0);
            m_loadBar->setFormat(tr("Starting…"));
            m_loadBar->setVisible(true);
        } else {
            m_loadBar->setVisible(false);
        }
        if (s == app::EngineHost::State::Empty) {
            m_engineState->setText(tr("No model loaded"));
            m_stats->clear();
        }
    });
    connect(m_engine, &app::EngineHost::loadProgress, this, [this](const QString& stage, double fraction) {
        m_loadBar->setValue(int(fraction * 1000.0));
        m_loadBar->setFormat(QStringLiteral("%1 %p%").arg(stage));
    });
    connect(m_engine, &app::EngineHost::loaded, this, [this](const app::LoadedModel& m) {
        m_settings->setLastModelPath(m.path);
        if (m.isRemote()) {
            // The provider's context, cache and devices are its own: none of ours apply.
            const app::RemoteModelRef remote = app::remoteModelOf(m.path);
            m_engineState->setText(tr("%1 on %2 (remote)").arg(remote.model, remote.provider));
            m_stats->clear();
            notifyInfo(tr("Chatting with %1 on %2 (remote)").arg(remote.model, remote.provider));
            return;
        }
        m_engineState->setText(tr("%1 · %2 · ctx %3 · KV %4 %5 · %6")
                                   .arg(m.name.isEmpty() ? m.path.section(QLatin1Char('/'), -1) : m.name, m.architecture)
                                   .arg(m.contextLength)
                                   .arg(m.kvType, QLocale().formattedDataSize(qint64(m.kvBytes)),
                                        m.gpuLayers > 0 ? tr("%1/%2 layers on %3").arg(m.gpuLayers).arg(m.layers).arg(m.device)
                                                        : tr("CPU"))
                               + (m.draftModel.isEmpty() ? QString() : tr(" · draft %1").arg(m.draftModel))
                               + (m.vision ? tr(" · vision") : QString()));
        notifyInfo(tr("Loaded %1 in %2 s%3").arg(m.name.isEmpty() ? QFileInfo(m.path).fileName() : m.name)
                       .arg(m.loadSeconds, 0, 'f', 1)
                       .arg(m.builtinChatTemplate ? tr(" (no chat template in the file: using ChatML)") : QString()));
        if (!m.fallbackReason.isEmpty()) notifyWarning(m.fallbackReason);
        if (!m.draftNote.isEmpty()) notifyWarning(tr("Loaded without the draft model: %1").arg(m.draftNote));
        if (!m.visionNote.isEmpty())
            notifyWarning(tr("Loaded without its vision projector (it takes no images): %1").arg(m.visionNote));
    });
    connect(m_engine, &app::EngineHost::loadFailed, this,
            [this](const QString& message) { notifyError(tr("Could not load the model: %1").arg(message)); });
    connect(m_engine, &app::EngineHost::idleUnloaded, this, [this](const QString& path) {
        m_chat->setModelToReload(path); // as Ollama does: the next message loads it again
        notifyInfo(tr("The model was unloaded after %1 without use, to free memory; your next message loads it "
                      "again.")
                       .arg(countText(m_settings->idleUnloadMinutes(), tr("minute"), tr("minutes"))));
    });
    connect(m_chat, &ChatView::reloadRequested, this, &MainWindow::loadModel);
    // Live statistics go to their own label: they never cover a message.
    connect(m_engine, &app::EngineHost::statsUpdated, this, [this](const app::EngineStatsSnapshot& s) {
        if (!m_engine->isLoaded() || m_engine->isRemote()) return;
        m_stats->setText(tr("running %1 · waiting %2 · KV blocks %3/%4")
                             .arg(s.running).arg(s.waiting).arg(s.kvBlocksUsed).arg(s.kvBlocksTotal));
    });
}

void MainWindow::notifyInfo(const QString& text) { m_notes->notify(NotificationArea::Level::Info, text); }
void MainWindow::notifyWarning(const QString& text) { m_notes->notify(NotificationArea::Level::Warning, text); }
void MainWindow::notifyError(const QString& text) { m_notes->notify(NotificationArea::Level::Error, text); }

void MainWindow::showStatus(const QString& text, StatusLevel level) {
    if (level == StatusLevel::Error) return notifyError(text);
    if (level == StatusLevel::Warning) return notifyWarning(text);
    // Routine progress ("Listing…", "Code copied"): a passing line in the status bar, which the
    // statistics (a label of their own) never cover.
    statusBar()->showMessage(text, 6000);
}

void MainWindow::withdrawStatus(const QString& text) {
    if (!text.isEmpty() && statusBar()->currentMessage() == text) statusBar()->clearMessage();
}

QString MainWindow::statsText() const { return m_stats->text(); }

QString MainWindow::engineStateText() const { return m_engineState->text(); }

} // namespace hearth::ui
