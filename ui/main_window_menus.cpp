// Main window, the menus and what their actions open: File (open, inspect, eject, quit), Models
// (quantize, remote providers, refresh), Tools (MCP servers, their resources and prompts, the file
// search model), View (pages, model picker, theme, notifications) and Help (the welcome page).
#include "main_window.h"

#include "chat_view.h"
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

#include "services/embedding_service.h"
#include "services/engine_host.h"
#include "services/model_library.h"
#include "services/settings.h"

#include <QActionGroup>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QTabWidget>

#include <utility>

namespace hearth::ui {

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

} // namespace hearth::ui
