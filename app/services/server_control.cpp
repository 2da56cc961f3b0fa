// ServerControl: one hearth::server::Server on the app's loaded engine (see server_control.h).
#include "services/server_control.h"

#include "services/engine_host.h"

#include "hearth/server.h"

#include <QCoreApplication>

namespace hearth::app {

ServerControl::ServerControl(EngineHost* engine, QObject* parent) : QObject(parent), m_engine(engine) {
    connect(m_engine, &EngineHost::loaded, this, [this] { serveLoaded(); });
}

ServerControl::~ServerControl() { stop(); }

int ServerControl::port() const { return m_server ? m_server->port() : 0; }

void ServerControl::serveLoaded() {
    if (!m_server || !m_engine || !m_engine->isLoaded()) return;
    const QString file = m_engine->model().path.section(QLatin1Char('/'), -1);
    if (m_library) {
        // Under the router's id for the file (its name without .gguf, which requests may add).
        QString id = file;
        if (id.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) id.chop(5);
        m_library->setPinned(id.toStdString(), m_engine->sharedEngine());
        return;
    }
    m_server->setEngine(m_engine->sharedEngine(), file.toStdString());
}

bool ServerControl::start(const ServerOptions& options, QString* error) {
    if (m_server) return true;
    server::ServerConfig c;
    c.host = options.host.toStdString();
    c.port = options.port;
    c.apiKey = options.apiKey.toStdString();
    for (const QString& o : options.corsOrigins)
        if (!o.trimmed().isEmpty()) c.corsOrigins.push_back(o.trimmed().toStdString());
    // The server's threads post here; a line that arrives after this object is gone is dropped.
    QPointer<ServerControl> self(this);
    auto post = [self](const QString& text) {
        QMetaObject::invokeMethod(
            QCoreApplication::instance(), [self, text] { if (self) Q_EMIT self->logLine(text); }, Qt::QueuedConnection);
    };
    c.log = [post](const std::string& line) { post(QString::fromStdString(line)); };
    c.requestLog = [post](const server::RequestRecord& r) { post(QString::fromStdString(server::formatRequestRecord(r))); };
    auto server = std::make_unique<server::Server>(c);
    const Status st = server->start();
    if (!st.isOk()) {
        if (error) *error = QString::fromStdString(st.message());
        return false;
    }
    m_server = std::move(server);
    if (!options.modelsFolder.isEmpty()) {
        server::ModelDirectoryConfig library;
        library.dir = options.modelsFolder.toStdString();
        library.allowChanges = false;
        library.log = c.log;
        m_library = server::makeDirectoryModelProvider(library);
        m_server->setModelProvider(m_library);
    }
    serveLoaded();
    if (m_engine) m_engine->setHeld(true);
    Q_EMIT runningChanged(true);
    return true;
}

void ServerControl::stop() {
    if (!m_server) return;
    m_server->stop();
    m_server.reset();
    m_library.reset();
    if (m_engine) m_engine->setHeld(false);
    Q_EMIT runningChanged(false);
}

} // namespace hearth::app
