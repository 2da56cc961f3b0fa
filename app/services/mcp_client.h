// One MCP server seen from the app: started as a child process speaking JSON-RPC over its stdin
// and stdout (or reached at a streamable HTTP URL), initialized, its tools listed (again when it says they changed) and called. All of
// it is asynchronous on the owner's thread (QProcess), with a time limit on every request, a cap
// on a message's size and on the server's stderr kept, and every misbehaviour (a hang, a flood,
// malformed JSON-RPC, an exit) reported as a signal with the reason; the process is stopped with
// the client.
#pragma once

#include "services/mcp_config.h"

#include <QByteArray>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>

#include <functional>
#include <optional>

class QProcess;
class QTimer;

namespace hearth::app {

class McpHttpTransport;

struct McpTool {
    QString name;
    QString title;        // the server's display name for it ("" when none)
    QString description;
    QJsonObject inputSchema; // JSON Schema of the arguments
    bool readOnly = false;   // annotations.readOnlyHint
};

// A resource a server offers (resources/list): a file, a page, a record it can hand over.
struct McpResource {
    QString uri;
    QString name;
    QString title;
    QString description;
    QString mimeType;
};

// A prompt template a server offers (prompts/list), filled in with its arguments by prompts/get.
struct McpPromptArgument {
    QString name;
    QString description;
    bool required = false;
};

struct McpPrompt {
    QString name;
    QString title;
    QString description;
    QList<McpPromptArgument> arguments;
};

// One message of a filled-in prompt: its role ("user" or "assistant") and its text (embedded
// resources' text included; images and audio named, not decoded).
struct McpPromptMessage {
    QString role;
    QString text;
};

struct McpToolResult {
    QString text;         // the text parts joined by blank lines (other parts named, e.g. "[image]")
    QJsonArray content;   // the parts as the server sent them
    bool isError = false; // the tool ran and reported an error (the model should see it)
};

class McpClient : public QObject {
    Q_OBJECT
public:
    enum class State { Stopped, Starting, Ready, Failed };

    explicit McpClient(McpServerConfig config, QObject* parent = nullptr);
    ~McpClient() override; // stops the server

    // Starts the server (or opens an HTTP session): initialize, initialized, tools/list, then ready()
    // or failed(). Calling it again while starting or ready does nothing; after a failure or a
    // stop it starts afresh.
    void start();
    // Ends the server: its stdin is closed, then it is terminated and killed if it lingers.
    // Pending calls fail with "stopped".
    void stop();

    // Calls a tool; the outcome comes as toolResult or toolFailed with the returned ticket
    // (never before this returns). Refused (toolFailed) unless ready.
    quint64 callTool(const QString& name, const QJsonObject& arguments);

    // Resources (mcp_client_resources.cpp): listed with paging (at most 1000), and read as text
    // (text parts joined; binary parts named, not decoded): resourcesListed / resourceRead, or
    // resourceFailed, with the returned ticket (never before this returns). Refused unless ready
    // and the server said it offers resources.
    bool offersResources() const { return m_offersResources; }
    quint64 listResources();
    quint64 readResource(const QString& uri);

    // Prompts (mcp_client_prompts.cpp): listed with paging (at most 1000), and filled in with
    // string arguments: promptsListed / promptGot, or promptFailed, with the returned ticket (never
    // before this returns). Refused unless ready and the server said it offers prompts.
    bool offersPrompts() const { return m_offersPrompts; }
    quint64 listPrompts();
    quint64 getPrompt(const QString& name, const QJsonObject& arguments);

    State state() const { return m_state; }
    const McpServerConfig& config() const { return m_config; }
    QList<McpTool> tools() const { return m_tools; }
    QString serverTitle() const { return m_serverTitle; } // serverInfo.title or .name
    QString lastError() const { return m_lastError; }

    // Limits (the defaults suit servers started with npx or uvx, which may download first).
    void setStartTimeoutMs(int ms) { m_startTimeoutMs = ms; }
    void setCallTimeoutMs(int ms) { m_callTimeoutMs = ms; }
    void setMaxMessageBytes(qint64 bytes) { m_maxMessageBytes = bytes; }

    static constexpr const char* kProtocolVersion = "2025-06-18";

Q_SIGNALS:
    void ready(const QList<hearth::app::McpTool>& tools);
    // The server listed different tools after saying they changed.
    void toolsChanged(const QList<hearth::app::McpTool>& tools);
    // Starting failed, or a ready server died or broke the protocol (the process is stopped).
    void failed(const QString& why);
    void toolResult(quint64 ticket, const hearth::app::McpToolResult& result);
    void toolFailed(quint64 ticket, const QString& why);
    void resourcesListed(quint64 ticket, const QList<hearth::app::McpResource>& resources);
    void resourceRead(quint64 ticket, const QString& uri, const QString& text);
    void resourceFailed(quint64 ticket, const QString& why);
    void promptsListed(quint64 ticket, const QList<hearth::app::McpPrompt>& prompts);
    void promptGot(quint64 ticket, const QString& name, const QList<hearth::app::McpPromptMessage>& messages);
    void promptFailed(quint64 ticket, const QString& why);

private:
    using Reply = std::function<void(const QJsonObject& result, const QString& error)>;
    struct Pending {
        Reply reply;
        QTimer* timer = nullptr;
        QString method;
    };

    void startProcess();
    void startHttp();
    void initialize();
    void closeHttp();
    void send(const QJsonObject& message);
    quint64 request(const QString& method, const QJsonObject& params, int timeoutMs, Reply reply);
    void notify(const QString& method, const QJsonObject& params = {});
    void onStdout();
    void onStderr();
    void onExited(int code, bool crashed);
    void handleMessage(const QJsonObject& message);
    void listTools(const QString& cursor, QList<McpTool> sofar, bool initial);
    void listResourcePage(quint64 ticket, const QString& cursor, QList<McpResource> sofar);
    // Refuses a request the client cannot make now: `failed` (resourceFailed or promptFailed) is
    // emitted soon, with the ticket returned.
    quint64 refuseLater(void (McpClient::*failed)(quint64, const QString&), const QString& why);
    void listPromptPage(quint64 ticket, const QString& cursor, QList<McpPrompt> sofar);
    void fail(const QString& why);
    // The request `id` waits for no more (its timer gone), if it still did.
    std::optional<Pending> takePending(quint64 id);
    void failPending(const QString& why);
    QString withStderr(const QString& why) const;

    McpServerConfig m_config;
    State m_state = State::Stopped;
    QProcess* m_process = nullptr;       // a stdio server
    McpHttpTransport* m_http = nullptr;  // or a streamable HTTP one
    QByteArray m_stdout;        // bytes after the last complete line
    QByteArray m_stderr;        // the tail kept for error messages
    QHash<quint64, Pending> m_pending; // by JSON-RPC id
    quint64 m_nextId = 1;
    QList<McpTool> m_tools;
    QString m_serverTitle;
    bool m_offersResources = false;
    bool m_offersPrompts = false;
    QString m_lastError;
    int m_startTimeoutMs = 60000;
    int m_callTimeoutMs = 120000;
    qint64 m_maxMessageBytes = 16ll << 20;
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::McpToolResult)
Q_DECLARE_METATYPE(hearth::app::McpResource)
Q_DECLARE_METATYPE(hearth::app::McpPrompt)
Q_DECLARE_METATYPE(hearth::app::McpPromptMessage)
