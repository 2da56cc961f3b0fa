// The application's main window: Chat, Models (library and hub), Settings, Server and Inspect
// pages over the app's services, which the window owns; a status bar with the engine's state.
#pragma once

#include <QMainWindow>

class QDragEnterEvent;
class QDropEvent;
class QLabel;
class QUrl;
class QTabWidget;

namespace hearth::app {
class DownloadManager;
class EngineHost;
class HubClient;
class ModelLibrary;
class Settings;
class Store;
} // namespace hearth::app

namespace hearth::ui {

class ChatView;
class ModelInfoView;
class ModelsView;
class ServerView;
class SettingsView;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // dataDir holds settings, the conversation database and (by default) the models folder.
    explicit MainWindow(const QString& dataDir, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Inspect a GGUF file (File > Open) and make it the model to load.
    void openModel(const QString& path);
    // Loads a model for chatting with the current settings.
    void loadModel(const QString& path);

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
    void showStatus(const QString& text);

private:
    void chooseModel();

    app::Settings* m_settings = nullptr;
    app::Store* m_store = nullptr;
    app::EngineHost* m_engine = nullptr;
    app::ModelLibrary* m_library = nullptr;
    app::HubClient* m_hub = nullptr;
    app::DownloadManager* m_downloads = nullptr;
    QTabWidget* m_pages = nullptr;
    ChatView* m_chat = nullptr;
    ModelsView* m_models = nullptr;
    SettingsView* m_settingsView = nullptr;
    ServerView* m_server = nullptr;
    ModelInfoView* m_info = nullptr;
    QLabel* m_engineState = nullptr;
};

} // namespace hearth::ui
