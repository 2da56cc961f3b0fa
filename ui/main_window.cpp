// Main window wiring: creates the services (settings, store, engine host, library, hub client,
// downloads) as children, the pages over them, the menu, and the status bar.
#include "main_window.h"

#include "chat_view.h"
#include "model_info_view.h"
#include "models_view.h"
#include "server_view.h"
#include "settings_view.h"

#include "services/download_manager.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/model_library.h"
#include "services/settings.h"
#include "services/store.h"

#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMimeData>
#include <QUrl>
#include <QFileDialog>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QStatusBar>
#include <QTabWidget>

namespace hearth::ui {

MainWindow::MainWindow(const QString& dataDir, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Hearth"));
    resize(1100, 720);
    QDir().mkpath(dataDir);
    m_settings = new app::Settings(QDir(dataDir).filePath(QStringLiteral("hearth.ini")), this);
    if (qEnvironmentVariableIsSet("HEARTH_MODELS_DIR"))
        m_settings->setModelsFolder(qEnvironmentVariable("HEARTH_MODELS_DIR"));
    QDir().mkpath(m_settings->modelsFolder());
    m_store = new app::Store(this);
    m_store->open(QDir(dataDir).filePath(QStringLiteral("conversations.sqlite")));
    m_engine = new app::EngineHost(this);
    m_library = new app::ModelLibrary(m_settings->modelsFolder(), this);
    m_hub = new app::HubClient(nullptr, this);
    m_hub->setBaseUrl(m_settings->hubBaseUrl());
    m_hub->setAccessToken(m_settings->accessToken());
    m_downloads = new app::DownloadManager(this);
    m_downloads->setMaxParallel(m_settings->parallelDownloads());
    if (!m_settings->accessToken().isEmpty())
        m_downloads->setAccessToken(m_settings->accessToken(), m_settings->hubBaseUrl().host());

    m_pages = new QTabWidget(this);
    m_pages->setTabPosition(QTabWidget::West);
    m_chat = new ChatView(m_engine, m_store, m_pages);
    m_models = new ModelsView(m_library, m_engine, m_hub, m_downloads, m_settings, m_pages);
    m_settingsView = new SettingsView(m_settings, m_engine, m_pages);
    m_server = new ServerView(m_settings, m_engine, m_pages);
    m_info = new ModelInfoView(m_pages);
    m_pages->addTab(m_chat, tr("Chat"));
    m_pages->addTab(m_models, tr("Models"));
    m_pages->addTab(m_settingsView, tr("Settings"));
    m_pages->addTab(m_server, tr("Server"));
    m_pages->addTab(m_info, tr("Inspect"));
    setCentralWidget(m_pages);
    m_chat->setSampling(m_settingsView->sampling());
    connect(m_settingsView, &SettingsView::samplingChanged, m_chat, &ChatView::setSampling);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model..."));
    open->setShortcut(QKeySequence::Open);
    connect(open, &QAction::triggered, this, &MainWindow::chooseModel);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"));
    quit->setShortcut(QKeySequence::Quit);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    m_engineState = new QLabel(tr("No model loaded"), this);
    statusBar()->addPermanentWidget(m_engineState);
    for (auto* source : {static_cast<QObject*>(m_chat), static_cast<QObject*>(m_models), static_cast<QObject*>(m_server)})
        connect(source, SIGNAL(statusMessage(QString)), this, SLOT(showStatus(QString)));
    connect(m_info, &ModelInfoView::statusChanged, this, &MainWindow::showStatus);
    connect(m_engine, &app::EngineHost::stateChanged, this, [this](app::EngineHost::State s) {
        if (s == app::EngineHost::State::Loading) m_engineState->setText(tr("Loading model..."));
    });
    connect(m_engine, &app::EngineHost::loaded, this, [this](const app::LoadedModel& m) {
        m_engineState->setText(tr("%1 · %2 · ctx %3 · KV %4 %5 · %6")
                                   .arg(m.name.isEmpty() ? m.path.section(QLatin1Char('/'), -1) : m.name, m.architecture)
                                   .arg(m.contextLength)
                                   .arg(m.kvType, QLocale().formattedDataSize(qint64(m.kvBytes)),
                                        m.gpuLayers > 0 ? tr("%1/%2 layers on %3").arg(m.gpuLayers).arg(m.layers).arg(m.device)
                                                        : tr("CPU")));
        showStatus(tr("Loaded in %1 s%2%3").arg(m.loadSeconds, 0, 'f', 1)
                       .arg(m.builtinChatTemplate ? tr(" (no chat template in the file: using ChatML)") : QString(),
                            m.fallbackReason.isEmpty() ? QString() : tr(" · %1").arg(m.fallbackReason)));
    });
    connect(m_engine, &app::EngineHost::loadFailed, this, [this](const QString& message) {
        m_engineState->setText(tr("No model loaded"));
        showStatus(tr("Could not load the model: %1").arg(message));
    });
    connect(m_engine, &app::EngineHost::statsUpdated, this, [this](const app::EngineStatsSnapshot& s) {
        if (!m_engine->isLoaded()) return;
        statusBar()->showMessage(tr("running %1 · waiting %2 · KV blocks %3/%4")
                                     .arg(s.running).arg(s.waiting).arg(s.kvBlocksUsed).arg(s.kvBlocksTotal), 2000);
    });
    connect(m_library, &app::ModelLibrary::imported, this, [this](quint64, const QString& path) {
        showStatus(tr("Added %1 to the library").arg(QFileInfo(path).fileName()));
    });
    connect(m_library, &app::ModelLibrary::importFailed, this, [this](quint64, const QString& message) {
        showStatus(tr("Could not add the model: %1").arg(message));
    });
    setAcceptDrops(true);
    m_library->refresh();
    showStatus(tr("Pick a model on the Models page, File > Open, or drop a .gguf file here"));
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

MainWindow::~MainWindow() = default;

void MainWindow::chooseModel() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), QString(),
                                                      tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) openModel(path);
}

void MainWindow::openModel(const QString& path) {
    m_info->load(path);
    m_settingsView->setModelPath(path);
    m_pages->setCurrentWidget(m_info);
}

void MainWindow::loadModel(const QString& path) {
    m_settingsView->setModelPath(path);
    m_engine->loadModel(path, m_settings->loadSettings());
}

void MainWindow::showStatus(const QString& text) { statusBar()->showMessage(text, 8000); }

} // namespace hearth::ui
