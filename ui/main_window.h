// The application's main window: notifications floating over the pages; Welcome (on first run), Chat (a
// model picker at its head), Models (library and hub), Settings, Server and Inspect pages over the app's
// services, which the window owns; a status bar with the engine's state and live statistics.
#pragma once

#include "status_level.h"
#include <QHash>
#include <QMainWindow>

#include <memory>

class QDragEnterEvent;
class QDropEvent;
class QLabel;
class QProgressBar;
class QUrl;
class QTabWidget;

namespace hearth::app {
class DeviceProbe;
class DownloadManager;
class EmbeddingService;
class EngineHost;
class HubClient;
class McpHost;
class DraftModelFinder;
class ModelLibrary;
class ProviderStore;
class RemoteClient;
class ServerControl;
class Settings;
class StarterInstall;
class Store;
} // namespace hearth::app

namespace hearth::ui {

class ChatView;
class ModelInfoView;
class ModelPicker;
class NotificationArea;
class WelcomeView;
class ModelsView;
class ServerView;
class SettingsView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // dataDir holds settings, the conversation database and (by default) the models folder.
    explicit MainWindow(const QString& dataDir, QWidget* parent = nullptr);
    ~MainWindow() override;

    // File > Open model: adds the file to the library where it lies (unless it is there) and
    // loads it for chatting.
    void openModel(const QString& path);
    // File > Inspect: shows a GGUF file's metadata and tensors without loading it.
    void inspectModel(const QString& path);
    // Loads a model for chatting with the current settings.
    void loadModel(const QString& path);

    // A message for the user: information fades, warnings and errors stay until closed.
    void notifyInfo(const QString& text);
    void notifyWarning(const QString& text);
    void notifyError(const QString& text);
    NotificationArea* notifications() const { return m_notes; }

    // The welcome page: shown on first run; Help > Welcome shows it again.
    void showWelcome();
    void dismissWelcome();
    bool isWelcomeShown() const;
    WelcomeView* welcomeView() const { return m_welcome; }
    ModelPicker* modelPicker() const { return m_picker; }
    app::StarterInstall* starterInstall() const { return m_install; }
    app::DownloadManager* downloads() const { return m_downloads; }
    QString statsText() const;
    // The status bar's model summary ("No model loaded", name · architecture · ctx ..., a remote one's).
    QString engineStateText() const;

    // Remote providers: their models join the picker; choosing one sends chats there.
    app::ProviderStore* providerStore() const { return m_providers.get(); }
    app::RemoteClient* remoteClient() const { return m_remote; }
    void refreshRemoteModels();
    // MCP servers (Tools › MCP servers…): their tools for the chat's model.
    app::McpHost* mcpHost() const { return m_mcp; }
    void openMcpServers();
    // Tools › File search model…, and what it sets: the embedding model for long chat files
    // ("": by words only), saved and loaded (or let go).
    void chooseEmbeddingModel();
    // Tools › Attach from MCP servers…: resources the servers offer, read into the chat's next message.
    void attachMcpResources();
    // Tools › Insert prompt from MCP servers…: a prompt template filled in, into the message box.
    void insertMcpPrompt();
    void setEmbeddingModel(const QString& path);
    app::EmbeddingService* embeddingService() const { return m_embeddings; }
    void useRemoteModel(const QString& provider, const QString& model);
    void openProviders();
    void openQuantize();

    app::EngineHost* engine() const { return m_engine; }
    app::Store* store() const { return m_store; }
    app::HubClient* hub() const { return m_hub; }
    app::Settings* settings() const { return m_settings; }
    ChatView* chatView() const { return m_chat; }
    ModelsView* modelsView() const { return m_models; }
    SettingsView* settingsView() const { return m_settingsView; }
    ServerView* serverView() const { return m_server; }
    QTabWidget* pages() const { return m_pages; }
    app::ModelLibrary* library() const { return m_library; }

    // GGUF files among `urls` (local files ending in .gguf); others are ignored.
    static QStringList droppedModels(const QList<QUrl>& urls);
    // Adds GGUF files to the library where they are (as a drop onto the window does).
    void importModels(const QStringList& paths);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private Q_SLOTS:
    // A view's message at the level it gave: failures and warnings stay on screen as
    // notifications, routine progress passes in the status bar.
    void showStatus(const QString& text, hearth::ui::StatusLevel level);
    // Takes a view's line out of the status bar once it no longer holds (when it still shows).
    void withdrawStatus(const QString& text);

private:
    void chooseModel();
    void chooseInspect();
    void wirePages();      // the pages, the picker and the welcome page to each other (main_window_pages.cpp)
    void buildMenus();     // main_window_menus.cpp
    void connectEngine();  // the engine's state to the status bar and notifications (main_window_status.cpp)
    void buildStatusBar(); // its labels, and the pages' messages to it (main_window_status.cpp)
    void applyIdleUnload();
    void restoreLastModel();

    app::Settings* m_settings = nullptr;
    app::Store* m_store = nullptr;
    app::EngineHost* m_engine = nullptr;
    app::DeviceProbe* m_devices = nullptr;
    app::ModelLibrary* m_library = nullptr;
    app::DraftModelFinder* m_drafts = nullptr; // which library files can draft for a model
    app::HubClient* m_hub = nullptr;
    app::DownloadManager* m_downloads = nullptr;
    QTabWidget* m_pages = nullptr;
    ChatView* m_chat = nullptr;
    ModelsView* m_models = nullptr;
    SettingsView* m_settingsView = nullptr;
    ServerView* m_server = nullptr;
    ModelInfoView* m_info = nullptr;
    WelcomeView* m_welcome = nullptr;
    ModelPicker* m_picker = nullptr;
    NotificationArea* m_notes = nullptr;
    app::StarterInstall* m_install = nullptr;
    QLabel* m_engineState = nullptr;
    QLabel* m_stats = nullptr;
    QProgressBar* m_loadBar = nullptr;
    QHash<quint64, QString> m_openTickets; // imports that load their model when done
    bool m_restoreLast = false;            // load the last model once the library is listed
    std::unique_ptr<app::ProviderStore> m_providers;
    app::RemoteClient* m_remote = nullptr;
    app::McpHost* m_mcp = nullptr;
    app::EmbeddingService* m_embeddings = nullptr; // the file search model (Tools › File search model…)
    app::ServerControl* m_serverControl = nullptr; // the embedded API server, shown by m_server
    QHash<quint64, QString> m_remoteLists;  // model list requests -> provider
};

} // namespace hearth::ui
