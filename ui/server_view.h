// The server page: shows the embedded OpenAI-compatible server (app::ServerControl runs it) and
// starts or stops it with the port, API key, LAN exposure (with a warning) and CORS origins
// chosen here; live request log and copyable curl and Python examples.
#pragma once

#include "status_level.h"
#include "services/engine_host.h"
#include "services/server_control.h"
#include "services/settings.h"

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace hearth::ui {

class ServerView : public QWidget {
    Q_OBJECT
public:
    ServerView(app::Settings* settings, app::EngineHost* engine, app::ServerControl* control, QWidget* parent = nullptr);

    // As the Start / Stop button does.
    bool start();
    void stop();
    bool isRunning() const { return m_control->isRunning(); }
    int port() const { return m_control->port(); }
    void setPort(int port); // while stopped
    // The request log as shown (for tests).
    QString logText() const;
    // "Stopped", "Running on port N — serving <model>", ...
    QString stateText() const;

Q_SIGNALS:
    void statusMessage(const QString& text, hearth::ui::StatusLevel level);

private:
    void appendLog(const QString& line);
    void updateExamples();
    void updateState();

    app::Settings* m_settings;
    app::EngineHost* m_engine;
    app::ServerControl* m_control;
    QSpinBox* m_port = nullptr;
    QLineEdit* m_apiKey = nullptr;
    QLineEdit* m_cors = nullptr;
    QCheckBox* m_lan = nullptr;
    QLabel* m_warning = nullptr;
    QLabel* m_state = nullptr;
    QPushButton* m_toggle = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QPlainTextEdit* m_examples = nullptr;
};

} // namespace hearth::ui
