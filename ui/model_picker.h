// The model picker in the chat page's header: every model of the library (and of connected
// remote providers) in one list, what is loaded and where it runs (CPU, or layers on a GPU), a
// Load/Eject button, and the load's stages in a progress bar while it loads.
#pragma once

#include "services/engine_host.h"
#include "services/model_library.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;

namespace hearth::ui {

class ModelPicker : public QWidget {
    Q_OBJECT
public:
    ModelPicker(app::ModelLibrary* library, app::EngineHost* engine, QWidget* parent = nullptr);

    // Remote models offered beside the library's: "provider/model" ids, shown under the provider.
    void setRemoteModels(const QString& provider, const QStringList& models);
    void clearRemoteModels();

    // The item chosen in the list: a file path, or "remote:provider/model" (for tests).
    QString currentChoice() const;
    int choiceCount() const;
    void choose(const QString& pathOrRemote);
    QString whereText() const;          // "CPU", "24/24 layers on vulkan:0", "not loaded"
    bool isProgressVisible() const;
    QString progressText() const;

Q_SIGNALS:
    void loadRequested(const QString& path);
    void remoteRequested(const QString& provider, const QString& model);
    void unloadRequested();
    void browseRequested(); // "Get more models…"

private:
    void rebuild();
    void updateState();

    app::ModelLibrary* m_library;
    app::EngineHost* m_engine;
    QComboBox* m_models = nullptr;
    QPushButton* m_load = nullptr;
    QLabel* m_where = nullptr;
    QProgressBar* m_progress = nullptr;
    QList<QPair<QString, QStringList>> m_remote; // provider -> models
    bool m_rebuilding = false;
};

} // namespace hearth::ui
