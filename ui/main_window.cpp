// Main window: creates the services (settings, store, engine host, library, hub client, downloads,
// starter install, remote providers, MCP servers, the file search model) as children and the pages
// over them, then has the pages wired (main_window_pages.cpp), the menus built
// (main_window_menus.cpp) and the status bar and notifications set up (main_window_status.cpp).
#include "main_window.h"

#include "chat_view.h"
#include "model_info_view.h"
#include "model_picker.h"
#include "models_view.h"
#include "notification_area.h"
#include "server_view.h"
#include "settings_view.h"
#include "theme.h"
#include "welcome_view.h"

#include "services/chat_documents.h"
#include "services/chat_folders.h"
#include "services/chat_images.h"
#include "services/chat_retrieval.h"
#include "services/chat_tools.h"
#include "services/device_probe.h"
#include "services/download_manager.h"
#include "services/draft_finder.h"
#include "services/embedding_service.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/mcp_host.h"
#include "services/model_library.h"
#include "services/remote_provider.h"
#include "services/server_control.h"
#include "services/settings.h"
#include "services/starter_install.h"
#include "services/store.h"

#include <QDir>
#include <QFileInfo>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <utility>

namespace hearth::ui {

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

    wirePages();
    buildMenus();
    connectEngine();
    buildStatusBar();
    // The MCP servers start with the window, so a chat's first reply is offered their tools.
    connect(m_mcp, &app::McpHost::serverFailed, this, [this](const QString& server, const QString& why) {
        showStatus(tr("MCP server %1 stopped working: %2").arg(server, why), StatusLevel::Error);
    });
    if (!m_mcp->servers().isEmpty()) QTimer::singleShot(0, m_mcp, &app::McpHost::startAll);
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

MainWindow::~MainWindow() {
    m_serverControl->stop(); // before the children go: it holds the engine host
}

void MainWindow::applyIdleUnload() { m_engine->setIdleUnloadMs(m_settings->idleUnloadMinutes() * 60 * 1000); }

} // namespace hearth::ui
