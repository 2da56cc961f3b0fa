// Main window, the pages wired together: the settings page's model and its drafts, the model
// picker (local and remote models), the welcome page and the starter install; opening, loading,
// inspecting and dropping model files; the last model loaded again at start.
#include "main_window.h"

#include "chat_view.h"
#include "model_info_view.h"
#include "model_picker.h"
#include "models_view.h"
#include "settings_view.h"
#include "welcome_view.h"

#include "services/device_probe.h"
#include "services/draft_finder.h"
#include "services/engine_host.h"
#include "services/load_fallback.h"
#include "services/model_library.h"
#include "services/remote_provider.h"
#include "services/settings.h"
#include "services/starter_install.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QTabWidget>
#include <QUrl>

namespace hearth::ui {

namespace {

bool sameFile(const QString& a, const QString& b) {
    const QString ca = QFileInfo(a).canonicalFilePath(), cb = QFileInfo(b).canonicalFilePath();
    return !ca.isEmpty() && ca == cb;
}

} // namespace

void MainWindow::wirePages() {
    m_chat->setSystemPrompt(m_settings->defaultSystemPrompt());
    m_chat->setSampling(m_settingsView->sampling());
    connect(m_settingsView, &SettingsView::samplingChanged, m_chat, &ChatView::setSampling);
    // Drafts for the settings page's model, checked again when the library changes.
    auto findDrafts = [this](const QString& model) {
        if (model.isEmpty()) return;
        QStringList files;
        for (const app::ModelEntry& e : m_library->models()) files << e.path;
        m_drafts->find(model, files);
    };
    connect(m_settingsView, &SettingsView::draftCandidatesWanted, this, findDrafts);
    connect(m_library, &app::ModelLibrary::modelsChanged, this,
            [this, findDrafts] { findDrafts(m_settingsView->modelPath()); });
    connect(m_drafts, &app::DraftModelFinder::found, m_settingsView, &SettingsView::setDraftModels);

    connect(m_picker, &ModelPicker::loadRequested, this, &MainWindow::loadModel);
    connect(m_picker, &ModelPicker::unloadRequested, m_engine, &app::EngineHost::unloadModel);
    connect(m_picker, &ModelPicker::remoteRequested, this, &MainWindow::useRemoteModel);
    connect(m_remote, &app::RemoteClient::modelsListed, this, [this](quint64 ticket, const QStringList& models) {
        const QString provider = m_remoteLists.take(ticket);
        if (!provider.isEmpty()) m_picker->setRemoteModels(provider, models);
    });
    connect(m_remote, &app::RemoteClient::listFailed, this, [this](quint64 ticket, const QString& message) {
        const QString provider = m_remoteLists.take(ticket);
        if (provider.isEmpty()) return;
        m_picker->setRemoteModels(provider, {});
        notifyWarning(tr("Remote provider %1: %2").arg(provider, message));
    });
    connect(m_picker, &ModelPicker::browseRequested, this, [this] {
        m_pages->setCurrentWidget(m_models);
        m_models->showDiscoverTab();
    });
    connect(m_welcome, &WelcomeView::openFileRequested, this, &MainWindow::chooseModel);
    connect(m_welcome, &WelcomeView::browseRequested, this, [this] {
        dismissWelcome();
        m_pages->setCurrentWidget(m_models);
        m_models->showDiscoverTab();
    });
    connect(m_welcome, &WelcomeView::dismissed, this, &MainWindow::dismissWelcome);
    connect(m_install, &app::StarterInstall::finished, this, [this](const QString& path) {
        m_library->refresh();
        loadModel(path);
        dismissWelcome();
        m_pages->setCurrentWidget(m_chat);
    });
    connect(m_install, &app::StarterInstall::failed, this,
            [this](const QString& message) { notifyError(tr("Could not download the model: %1").arg(message)); });
}

void MainWindow::restoreLastModel() {
    const QString last = m_settings->lastModelPath();
    // A remote model is chosen again by hand: its provider may be offline.
    if (last.isEmpty() || app::isRemoteModelPath(last) || !QFileInfo(last).isFile()) return;
    if (m_engine->state() != app::EngineHost::State::Empty) return; // the user was quicker
    loadModel(last); // the picker shows it once loaded
}

void MainWindow::openModel(const QString& path) {
    dismissWelcome();
    // Already in the library (in its folder or referenced): load it as it is.
    for (const app::ModelEntry& e : m_library->models())
        if (sameFile(e.path, path)) {
            loadModel(e.path);
            m_pages->setCurrentWidget(m_chat);
            return;
        }
    const quint64 ticket = m_library->importModel(path, app::ModelLibrary::ImportMode::Reference);
    m_openTickets.insert(ticket, path);
}

void MainWindow::inspectModel(const QString& path) {
    m_info->load(path);
    const app::ModelEntry* entry = m_library->find(path);
    m_settingsView->setModelPath(path, entry ? entry->projectorPath : QString());
    m_pages->setCurrentWidget(m_info);
}

void MainWindow::loadModel(const QString& path) {
    const app::ModelEntry* entry = m_library->find(path);
    m_settingsView->setModelPath(path, entry ? entry->projectorPath : QString());
    app::LoadSettings settings = m_settings->loadSettings();
    settings.draftModel = m_settings->draftModelFor(path);
    if (entry) settings.projectorPath = entry->projectorPath;
    // Say before loading when the chosen device will not run it all (the engine says so after too).
    // The devices as the probe found them (before it has, the engine's own notice says so).
    if (settings.device != QStringLiteral("cpu") && m_devices->isReady())
        if (const QString why = app::fallbackReasonFor(settings, m_devices->devices(), path); !why.isEmpty())
            notifyWarning(tr("%1 will run on the CPU: %2").arg(QFileInfo(path).fileName(), why));
    m_engine->loadModel(path, settings);
}

QStringList MainWindow::droppedModels(const QList<QUrl>& urls) {
    QStringList paths;
    for (const QUrl& url : urls) {
        if (!url.isLocalFile()) continue;
        const QString path = url.toLocalFile();
        if (path.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive) && QFileInfo(path).isFile())
            paths << path;
    }
    return paths;
}

void MainWindow::importModels(const QStringList& paths) {
    for (const QString& path : paths) m_library->importModel(path, app::ModelLibrary::ImportMode::Reference);
    if (!paths.isEmpty()) m_pages->setCurrentWidget(m_models);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls() && !droppedModels(event->mimeData()->urls()).isEmpty())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QStringList paths = event->mimeData()->hasUrls() ? droppedModels(event->mimeData()->urls()) : QStringList();
    if (paths.isEmpty()) return;
    event->acceptProposedAction();
    importModels(paths);
}

void MainWindow::refreshRemoteModels() {
    m_picker->clearRemoteModels();
    for (const app::RemoteProvider& p : m_providers->providers()) m_remoteLists.insert(m_remote->listModels(p), p.name);
}

void MainWindow::useRemoteModel(const QString& provider, const QString& model) {
    const auto p = m_providers->find(provider);
    if (!p) {
        notifyError(tr("Remote provider %1 is not configured any more").arg(provider));
        return;
    }
    m_engine->useRemote(*p, model, m_remote);
    m_pages->setCurrentWidget(m_chat);
}

void MainWindow::showWelcome() {
    if (m_pages->indexOf(m_welcome) < 0) m_pages->insertTab(0, m_welcome, tr("Welcome"));
    m_pages->setCurrentWidget(m_welcome);
}

void MainWindow::dismissWelcome() {
    m_settings->setWelcomeDone(true);
    const int i = m_pages->indexOf(m_welcome);
    if (i < 0) return;
    m_pages->removeTab(i);
    m_welcome->hide();
    m_pages->setCurrentWidget(m_chat);
}

bool MainWindow::isWelcomeShown() const { return m_pages->indexOf(m_welcome) >= 0; }

} // namespace hearth::ui
