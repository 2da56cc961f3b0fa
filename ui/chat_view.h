// The chat page: conversations (stored in SQLite), the transcript rendered as Markdown with the
// reply streaming in, and the input box. Sent messages are committed before they are shown.
#pragma once

#include "services/engine_host.h"
#include "services/store.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTextBrowser;
class QTimer;

namespace hearth::ui {

class ChatView : public QWidget {
    Q_OBJECT
public:
    ChatView(app::EngineHost* engine, app::Store* store, QWidget* parent = nullptr);

    // Sampling of new replies (the settings page edits them).
    void setSampling(const app::Sampling& sampling) { m_sampling = sampling; }
    void setSystemPrompt(const QString& text) { m_systemPrompt = text; }

    // What the transcript shows (for tests): the Markdown source.
    QString transcriptMarkdown() const { return m_markdown; }
    bool isGenerating() const { return m_activeRequest != 0; }
    qint64 conversationId() const { return m_conversationId; }

    void newChat();
    void sendText(const QString& text); // as if typed and Enter pressed
    void stop();
    void regenerate();
    void reloadConversations();

Q_SIGNALS:
    void statusMessage(const QString& text);
    void replyFinished(const QString& text);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    struct Message {
        qint64 id = 0;
        QString role;
        QString content;
        int tokens = 0;
        double ttftMs = 0.0;
        double tokensPerSecond = 0.0;
    };

    void openConversation(qint64 id);
    void appendUserMessage(const QString& text);
    void startReply();
    void render();
    void scheduleRender();
    void updateButtons();
    void onToken(quint64 id, const QString& text);
    void onFinished(quint64 id, const QString& reason, const app::GenerationUsage& usage);
    void onFailed(quint64 id, const QString& message);

    app::EngineHost* m_engine;
    app::Store* m_store;
    app::Sampling m_sampling;
    QString m_systemPrompt;

    QListWidget* m_list = nullptr;
    QLineEdit* m_search = nullptr;
    QTextBrowser* m_transcript = nullptr;
    QPlainTextEdit* m_input = nullptr;
    QPushButton* m_send = nullptr;
    QPushButton* m_stop = nullptr;
    QPushButton* m_regenerate = nullptr;
    QLabel* m_stats = nullptr;
    QProgressBar* m_context = nullptr;
    QTimer* m_renderTimer = nullptr;

    qint64 m_conversationId = 0;
    QList<Message> m_messages;
    QString m_markdown;
    QString m_streamText;
    QString m_error;
    quint64 m_activeRequest = 0;
    qint64 m_replacing = 0;           // regenerate: the stored reply being replaced
    QString m_pendingText;            // waiting for its conversation to be created
    quint64 m_createTicket = 0;
    quint64 m_userTicket = 0;
    QString m_userText;
    quint64 m_listTicket = 0;
    quint64 m_loadTicket = 0;
    quint64 m_searchTicket = 0;
};

} // namespace hearth::ui
