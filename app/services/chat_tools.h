// The chat's side of MCP tools: a finished reply read for the tool calls its model wrote, the
// calls kept with the message (JSON in the store), and ChatToolRunner, which runs a reply's calls
// through the McpHost once the user allows each (or at once for a tool set to "always"), hands
// each result back for the model and says when the round is over, at most kMaxRounds rounds
// after the user's message.
#pragma once

#include "services/mcp_host.h"
#include "services/service_types.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

namespace hearth::app {

struct ReplyToolCalls {
    QString content;            // the reply's text outside its calls
    QList<ChatToolCall> calls;  // empty: the reply called nothing
};

// Reads a finished answer for calls of the tools offered (OpenAI's function list, as sent with
// the request): Hermes <tool_call> blocks, Mistral [TOOL_CALLS] and Llama 3.x bare JSON naming
// an offered tool. Nothing offered: no calls.
ReplyToolCalls readToolCalls(const QString& answer, const QJsonArray& offered);
// What the transcript shows of an answer being written while tools are offered: the text before
// a call's markup starts (a marker cut across pieces included).
QString visibleReplyText(const QString& streamed);

// A message's calls as stored: [{"id", "name", "arguments"}] ("" for none), and back (a value
// that does not read gives none).
QString toolCallsJson(const QList<ChatToolCall>& calls);
QList<ChatToolCall> toolCallsFromJson(const QString& json);
// The same array as a value (chat exports), and one call read back from its object.
QJsonArray toolCallsArray(const QList<ChatToolCall>& calls);
ChatToolCall toolCallFrom(const QJsonObject& object);

class ChatToolRunner : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxRounds = 8;
    enum class Phase { None, Waiting, Running, Done };

    // Without a host no tools are offered and every call ends as an error for the model.
    explicit ChatToolRunner(McpHost* host, QObject* parent = nullptr);

    // The tools a reply may call now (McpHost::chatTools; none without a host).
    QJsonArray offeredTools() const;

    // Starts a reply's calls. A call of a tool set to "always" runs at once; one set to "ask"
    // waits for allowOnce / allowAlways / deny (all of them with `askAll`, for calls found
    // unanswered when a chat is opened); a tool not offered or not running ends at once with an
    // error the model reads. The previous round, if any, is dropped.
    void begin(const QList<ChatToolCall>& calls, bool askAll = false);
    void allowOnce(const QString& callId);
    void allowAlways(const QString& callId); // and the tool runs without asking from now on
    void deny(const QString& callId);        // never reaches the server; the model is told
    // The user's Stop: every call without an outcome ends as stopped (one running may still
    // finish in its server, unheard), then roundFinished(true).
    void stopAll();
    // Drops the round without outcomes: calls running finish unheard, waiting ones are forgotten.
    void cancel();

    bool isActive() const { return !m_order.isEmpty(); }
    Phase phase(const QString& callId) const;
    QStringList waitingCalls() const;

    // Rounds begun since resetRounds() (the user's message); more may follow while below kMaxRounds.
    int rounds() const { return m_rounds; }
    bool mayContinue() const { return m_rounds < kMaxRounds; }
    void resetRounds() { m_rounds = 0; }

Q_SIGNALS:
    // A call waits for the user, started, or ended: the transcript shows it anew.
    void changed();
    // A call's outcome, for the model to read as the tool's message (an error says so in text).
    void callFinished(const hearth::app::ChatToolCall& call, const QString& result, bool isError);
    // Every call of the round has its outcome (after the last callFinished); `stopped`: by stopAll,
    // so the model is not asked again.
    void roundFinished(bool stopped);

private:
    struct Pending {
        ChatToolCall call;
        Phase phase = Phase::Waiting;
        quint64 ticket = 0; // the host's, while running
    };
    void run(const QString& callId, bool approved);
    void finish(const QString& callId, const QString& result, bool isError, bool stopping = false);
    void onHostFinished(quint64 ticket, const McpToolResult& result);
    void onHostFailed(quint64 ticket, const QString& why);

    McpHost* m_host;
    QHash<QString, Pending> m_calls; // by call id
    QStringList m_order;             // the round's call ids, as the reply wrote them
    int m_rounds = 0;
};

} // namespace hearth::app
