// Main window wiring: creates the services (settings, store, engine host, library, hub client,
// downloads, starter install) as children, the pages over them, the model picker and
// notifications, the menus, and the status bar.
#include "main_window.h"

#include "chat_view.h"
#include "count_text.h"
#include "embedding_model_dialog.h"
#include "mcp_dialog.h"
#include "mcp_prompt_dialog.h"
#include "mcp_resource_dialog.h"
#include "model_info_view.h"
#include "model_picker.h"
#include "models_view.h"
#include "notification_area.h"
#include "providers_dialog.h"
#include "quantize_dialog.h"
#include "server_view.h"
#include "settings_view.h"
#include "theme.h"
#include "welcome_view.h"

#include "services/device_probe.h"
#include "services/download_manager.h"
#include "services/chat_documents.h"
#include "services/chat_images.h"
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"
#include "services/embedding_service.h"
#include "services/chat_tools.h"
#include "services/draft_finder.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/load_fallback.h"
#include "services/memory_estimate.h"
#include "services/model_library.h"
#include "services/remote_provider.h"
#include "services/server_control.h"
#include "services/settings.h"
#include "services/starter_install.h"
#include "services/store.h"

#include <QActionGroup>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QShortcut>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include <utility>

namespace hearth::ui {

namespace {

bool sameFile(const QString& a, const QString& b) {
    const QString ca = QFileInfo(a).canonicalFilePath(), cb = QFileInfo(b).canonicalFilePath();
    return !ca.isEmpty() && ca == cb;
}

} // namespace

MainWindow::MainWindow(const QString& dataDir, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Hearth"));
    resize(1180, 780);
    QDir().mkpath(dataDir);
    m_settings = new app::Settings(QDir(dataDir).filePath(QStringLiteral("hearth.ini")), this);
    if (qEnvironmentVariableIsSet("HEARTH_MODELS_DIR"))
        m_settings->setModelsFolder(qEnvironmentVariable("HEARTH_MODELS_DIR"));
    QDir().mkpath(m_settings->modelsFolder());
    applyTheme(m_settings->theme());
    m_store = new app::Store(this);
    m_store->open(QDir(dataDir).filePath(QStringLiteral("conversations.sqlite")));
    m_engine = new app::EngineHost(this);
    m_devices = new app::DeviceProbe(this); // the one lookup of this machine's devices, for every page
    m_devices->start();
    m_library = new app::ModelLibrary(m_settings->modelsFolder(), this);
    m_drafts = new app::DraftModelFinder(this);
    m_hub = new app::HubClient(nullptr, this);
    m_hub->setBaseUrl(m_settings->hubBaseUrl());
    m_hub->setAccessToken(m_settings->accessToken());
    m_downloads = new app::DownloadManager(this);
    m_downloads->setMaxParallel(m_settings->parallelDownloads());
    if (!m_settings->accessToken().isEmpty())
        m_downloads->setAccessToken(m_settings->accessToken(), m_settings->hubBaseUrl().host());
    m_install = new app::StarterInstall(m_hub, m_downloads, m_settings->modelsFolder(), this);
    m_providers = std::make_unique<app::ProviderStore>(dataDir);
    m_remote = new app::RemoteClient(m_providers.get(), this);
    m_mcp = new app::McpHost(dataDir, this);

    m_pages = new QTabWidget(this);
    m_pages->setTabPosition(QTabWidget::West);
    m_pages->setDocumentMode(true);
    m_chat = new ChatView(m_engine, m_store, m_pages);
    m_chat->setImageReader(new app::ImageFileReader(this));
    m_chat->setDocumentReader(new app::DocumentReader(this));
    // Long files are searched by their words, and by meaning with the embedding model chosen.
    m_embeddings = new app::EmbeddingService(this);
    auto* retrieval = new app::ChatRetrieval(m_embeddings, this);
    retrieval->setStore(m_store); // files' vectors kept with their chat
    m_chat->setRetrieval(retrieval);
    m_chat->setFolders(new app::ChatFolders(m_store, this)); // folders of documents, read per chat
    connect(m_embeddings, &app::EmbeddingService::loadFailed, this, [this](const QString& path, const QString& why) {
        showStatus(tr("The file search model %1 did not load: %2").arg(QFileInfo(path).fileName(), why), StatusLevel::Error);
    });
    if (const QString embedding = m_settings->embeddingModelPath(); !embedding.isEmpty()) m_embeddings->load(embedding);
    m_chat->setToolRunner(new app::ChatToolRunner(m_mcp, this));
    m_models = new ModelsView(m_library, m_engine, m_hub, m_downloads, m_settings, m_devices, m_pages);
    m_settingsView = new SettingsView(m_settings, m_engine, m_devices, m_pages);
    m_serverControl = new app::ServerControl(m_engine, this);
    m_server = new ServerView(m_settings, m_engine, m_serverControl, m_pages);
    m_info = new ModelInfoView(m_pages);
    m_welcome = new WelcomeView(m_install, m_devices, m_pages);
    m_welcome->setStarters(app::ModelLibrary::starterModels());
    m_welcome->hide();
    m_pages->addTab(m_chat, tr("Chat"));
    m_pages->addTab(m_models, tr("Models"));
    m_pages->addTab(m_settingsView, tr("Settings"));
    m_pages->addTab(m_server, tr("Server"));
    m_pages->addTab(m_info, tr("Inspect"));

    // The model picker heads the chat page; notifications float over the top right of every page
    // (outside the layout, so that no control moves when one shows).
    m_picker = new ModelPicker(m_library, m_engine, this);
    m_chat->setHeaderWidget(m_picker);
    auto* central = new QWidget(this);
    auto* column = new QVBoxLayout(central);
    column->setContentsMargins(0, 2, 0, 0);
    column->addWidget(m_pages, 1);
    setCentralWidget(central);
    m_notes = new NotificationArea(central);
    m_notes->setAnchor(m_picker); // on the chat page, below the picker

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

    buildMenus();
    connectEngine();

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
    // The MCP servers start with the window, so a chat's first reply is offered their tools.
    connect(m_mcp, &app::McpHost::serverFailed, this, [this](const QString& server, const QString& why) {
        showStatus(tr("MCP server %1 stopped working: %2").arg(server, why), StatusLevel::Error);
    });
    if (!m_mcp->servers().isEmpty()) QTimer::singleShot(0, m_mcp, &app::McpHost::startAll);
    connect(m_models, &ModelsView::statusMessage, this, &MainWindow::showStatus);
    connect(m_server, &ServerView::statusMessage, this, &MainWindow::showStatus);
    connect(m_info, &ModelInfoView::statusChanged, this, &MainWindow::showStatus);
    connect(m_chat, &ChatView::statusWithdrawn, this, &MainWindow::withdrawStatus);
    connect(m_models, &ModelsView::statusWithdrawn, this, &MainWindow::withdrawStatus);
    connect(m_library, &app::ModelLibrary::imported, this, [this](quint64 ticket, const QString& path) {
        if (m_openTickets.contains(ticket)) {
            m_openTickets.remove(ticket);
            loadModel(path);
            m_pages->setCurrentWidget(m_chat);
            return;
        }
        notifyInfo(tr("Added %1 to the library").arg(QFileInfo(path).fileName()));
    });
    connect(m_library, &app::ModelLibrary::importFailed, this, [this](quint64 ticket, const QString& message) {
        m_openTickets.remove(ticket);
        notifyError(tr("Could not add the model: %1").arg(message));
    });
    connect(m_settings, &app::Settings::changed, this, [this](const QString& key) {
        if (key == QStringLiteral("load/idleUnloadMinutes")) applyIdleUnload();
        if (key == QStringLiteral("ui/theme")) applyTheme(m_settings->theme());
        if (key == QStringLiteral("chat/systemPrompt")) m_chat->setSystemPrompt(m_settings->defaultSystemPrompt());
    });
    applyIdleUnload();
    refreshRemoteModels();
    setAcceptDrops(true);
    // The model used last is loaded again once the library has been listed (its projector with it).
    m_restoreLast = m_settings->welcomeDone();
    connect(m_library, &app::ModelLibrary::scanningChanged, this, [this](bool scanning) {
        if (!scanning && std::exchange(m_restoreLast, false)) restoreLastModel();
    });
    m_library->refresh();
    if (!m_settings->welcomeDone()) showWelcome();
    else m_pages->setCurrentWidget(m_chat);
}

void MainWindow::restoreLastModel() {
    const QString last = m_settings->lastModelPath();
    // A remote model is chosen again by hand: its provider may be offline.
    if (last.isEmpty() || app::isRemoteModelPath(last) || !QFileInfo(last).isFile()) return;
    if (m_engine->state() != app::EngineHost::State::Empty) return; // the user was quicker
    loadModel(last); // the picker shows it once loaded
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model…"));
    open->setShortcut(QKeySequence::Open);
    open->setToolTip(tr("Add a GGUF file to the library and load it"));
    connect(open, &QAction::triggered, this, &MainWindow::chooseModel);
    QAction* inspect = file->addAction(tr("&Inspect model file…"));
    connect(inspect, &QAction::triggered, this, &MainWindow::chooseInspect);
    QAction* eject = file->addAction(tr("&Eject model"));
    eject->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+E")));
    connect(eject, &QAction::triggered, m_engine, &app::EngineHost::unloadModel);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QMenu* models = menuBar()->addMenu(tr("&Models"));
    QAction* quantize = models->addAction(tr("&Quantize…"));
    quantize->setToolTip(tr("Make a smaller copy of a model in another weight type"));
    connect(quantize, &QAction::triggered, this, &MainWindow::openQuantize);
    QAction* providers = models->addAction(tr("&Remote providers…"));
    connect(providers, &QAction::triggered, this, &MainWindow::openProviders);
    QAction* refresh = models->addAction(tr("Re&fresh the library"));
    refresh->setShortcut(QKeySequence::Refresh);
    connect(refresh, &QAction::triggered, this, [this] {
        m_library->refresh();
        refreshRemoteModels();
    });

    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    QAction* mcp = tools->addAction(tr("&MCP servers…"));
    mcp->setToolTip(tr("Programs that give the chat's model tools: files, search, calendars…"));
    connect(mcp, &QAction::triggered, this, &MainWindow::openMcpServers);
    QAction* resources = tools->addAction(tr("&Attach from MCP servers…"));
    resources->setToolTip(tr("Files, pages and records your MCP servers offer, for the next message"));
    connect(resources, &QAction::triggered, this, &MainWindow::attachMcpResources);
    QAction* prompts = tools->addAction(tr("Insert &prompt from MCP servers…"));
    prompts->setToolTip(tr("Prompt templates your MCP servers offer, filled in and put into the message box"));
    connect(prompts, &QAction::triggered, this, &MainWindow::insertMcpPrompt);
    QAction* fileSearch = tools->addAction(tr("&File search model…"));
    fileSearch->setToolTip(tr("The embedding model that searches long files in chats by meaning"));
    connect(fileSearch, &QAction::triggered, this, &MainWindow::chooseEmbeddingModel);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    const QList<QPair<QString, QWidget*>> pages = {{tr("&Chat"), m_chat},
                                                   {tr("&Models"), m_models},
                                                   {tr("&Settings"), m_settingsView},
                                                   {tr("Se&rver"), m_server},
                                                   {tr("&Inspect"), m_info}};
    for (int i = 0; i < pages.size(); ++i) {
        QAction* a = view->addAction(pages[i].first);
        a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(i + 1)));
        QWidget* page = pages[i].second;
        connect(a, &QAction::triggered, this, [this, page] { m_pages->setCurrentWidget(page); });
    }
    QAction* pick = view->addAction(tr("Choose &model"));
    pick->setShortcut(QKeySequence(QStringLiteral("Ctrl+K")));
    connect(pick, &QAction::triggered, this, [this] {
        if (auto* combo = m_picker->findChild<QWidget*>()) combo->setFocus();
    });
    view->addSeparator();
    QMenu* theme = view->addMenu(tr("&Theme"));
    auto* themes = new QActionGroup(this);
    for (const auto& [name, label] : {std::pair{QStringLiteral("system"), tr("Follow the system")},
                                      std::pair{QStringLiteral("light"), tr("Light")},
                                      std::pair{QStringLiteral("dark"), tr("Dark")}}) {
        QAction* a = theme->addAction(label);
        a->setCheckable(true);
        a->setChecked(m_settings->theme() == name);
        themes->addAction(a);
        connect(a, &QAction::triggered, this, [this, name] { m_settings->setTheme(name); });
    }
    QAction* dismiss = view->addAction(tr("&Dismiss notifications"));
    connect(dismiss, &QAction::triggered, this, [this] { m_notes->dismissAll(); });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* welcome = help->addAction(tr("&Welcome page"));
    connect(welcome, &QAction::triggered, this, &MainWindow::showWelcome);
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

void MainWindow::applyIdleUnload() { m_engine->setIdleUnloadMs(m_settings->idleUnloadMinutes() * 60 * 1000); }

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

MainWindow::~MainWindow() {
    m_serverControl->stop(); // before the children go: it holds the engine host
}

void MainWindow::chooseModel() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) openModel(path);
}

void MainWindow::chooseInspect() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Inspect model file"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) inspectModel(path);
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

void MainWindow::openProviders() {
    ProvidersDialog dialog(m_providers.get(), m_remote, this);
    connect(&dialog, &ProvidersDialog::providersChanged, this, &MainWindow::refreshRemoteModels);
    dialog.exec();
}

void MainWindow::openMcpServers() {
    McpDialog dialog(m_mcp, this);
    dialog.exec();
}

void MainWindow::attachMcpResources() {
    McpResourceDialog dialog(m_mcp, this);
    if (dialog.exec() != QDialog::Accepted) return;
    m_chat->addDocuments(dialog.documents(), dialog.problems());
    m_pages->setCurrentWidget(m_chat);
}

void MainWindow::insertMcpPrompt() {
    McpPromptDialog dialog(m_mcp, this);
    if (dialog.exec() != QDialog::Accepted) return;
    m_chat->insertDraft(dialog.text());
    m_pages->setCurrentWidget(m_chat);
}

void MainWindow::chooseEmbeddingModel() {
    EmbeddingModelDialog dialog(m_library->models(), m_settings->embeddingModelPath(), this);
    if (dialog.exec() != QDialog::Accepted) return;
    setEmbeddingModel(dialog.chosenPath());
}

void MainWindow::setEmbeddingModel(const QString& path) {
    if (path == m_settings->embeddingModelPath() && (path.isEmpty() || m_embeddings->modelPath() == path)) return;
    m_settings->setEmbeddingModelPath(path);
    if (path.isEmpty()) {
        m_embeddings->unload();
        showStatus(tr("Long files are searched by their words"), StatusLevel::Info);
        return;
    }
    m_embeddings->load(path);
    showStatus(tr("Loading %1 to search long files by meaning").arg(QFileInfo(path).fileName()), StatusLevel::Info);
}

void MainWindow::openQuantize() {
    QString path = m_models->selectedPath();
    if (path.isEmpty() && m_engine->isLoaded() && !m_engine->isRemote()) path = m_engine->model().path;
    if (path.isEmpty()) {
        notifyInfo(tr("Choose a model on the Models page first, then Models › Quantize…"));
        m_pages->setCurrentWidget(m_models);
        m_models->showLibraryTab();
        return;
    }
    auto* dialog = new QuantizeDialog(m_library, path, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QuantizeDialog::quantized, this,
            [this](const QString& out) { notifyInfo(tr("Quantized: %1 is in the library").arg(QFileInfo(out).fileName())); });
    dialog->open();
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
