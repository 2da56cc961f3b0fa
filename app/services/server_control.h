// The embedded API server's lifetime, apart from the page that shows it: started and stopped
// here with the options the page gives, fed the engine the app has loaded (and each one loaded
// after), holding that engine while it runs (its requests do not pass through EngineHost, so the
// idle unload waits), and stopped with the app. With a models folder it serves the library as
// hearth-server --models-dir does (the same router): the loaded model under its file's name and
// any other model a request names, loaded beside it. Its log lines, written on the server's
// threads, arrive as signals on this object's thread.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <memory>

namespace hearth::server {
class ModelProvider;
class Server;
}

namespace hearth::app {

class EngineHost;

struct ServerOptions {
    QString host = QStringLiteral("127.0.0.1"); // 0.0.0.0: reachable from the network
    int port = 8080;                            // 0: any free port
    QString apiKey;                             // "" : no key needed
    QStringList corsOrigins;
    // The library to serve beside the loaded model ("": the loaded model only). The library is
    // read-only through the API (no copy, delete or pull: the app manages it).
    QString modelsFolder;
};

class ServerControl : public QObject {
    Q_OBJECT
public:
    explicit ServerControl(EngineHost* engine, QObject* parent = nullptr);
    ~ServerControl() override; // stops the server

    // Starts listening (true when it was running already); false with the reason in *error.
    bool start(const ServerOptions& options, QString* error = nullptr);
    void stop();
    bool isRunning() const { return m_server != nullptr; }
    int port() const; // the port listened on (0 when stopped)

Q_SIGNALS:
    void runningChanged(bool running);
    // A line of the server's own log or its request log ("POST /v1/chat/completions 200 ...").
    void logLine(const QString& line);

private:
    void serveLoaded();

    QPointer<EngineHost> m_engine; // may go first when both are children of one window
    std::unique_ptr<server::Server> m_server;
    std::shared_ptr<server::ModelProvider> m_library; // with a models folder: the router
};

} // namespace hearth::app
