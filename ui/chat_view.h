// The chat page: the conversation list, the transcript and the composer (classes of their own)
// put together, and the chat shown kept here: its messages (stored in SQLite; a sent message is
// committed before it is shown), the reply streaming in (its reasoning apart, written to the
// store as it grows), its settings, files, folders, images and tool calls.
#pragma once

#include "chat_transcript.h"
#include "status_level.h"
#include "services/engine_host.h"
#include "services/store.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QStringList>
#include <QWidget>

#include <optional>
#include <utility>

class QDragEnterEvent;
class QDropEvent;
class QMimeData;
class QVBoxLayout;
class QProgressBar;
class QTimer;
class QUrl;

namespace hearth::app {
class ChatFolders;
class ChatRetrieval;
class ChatToolRunner;
class DocumentReader;
class ImageFileReader;
class ReplyRecorder;
} // namespace hearth::app

namespace hearth::ui {

class ChatComposer;
class ConversationList;

class ChatView : public QWidget {
    Q_OBJECT
public:
    ChatView(app::EngineHost* engine, app::Store* store, QWidget* parent = nullptr);
    // The service that reads the image files the user attaches (owned by the caller, like the
    // engine and the store); without one, files cannot be attached (pasted images can).
    void setImageReader(app::ImageFileReader* reader);

    // Files attached as text (chat_view_documents.cpp): text, Markdown, code and PDF files read
    // off the GUI thread by `reader` (owned by the caller), shown above the input, sent with the
    // next message (the model reads each before the message's text) and stored with it. What
    // cannot be attached is said with statusMessage.
    void setDocumentReader(app::DocumentReader* reader);
    // Files longer than app::kInlineDocumentChars are searched for each question instead of given
    // whole, by `retrieval` (owned by the caller); the parts found go with the question and are
    // cited under the answer. Without it, every file is given whole.
    void setRetrieval(app::ChatRetrieval* retrieval);
    // Folders of documents searched for each question of the chat shown (chat_view_folders.cpp):
    // `folders` (owned by the caller) reads them and keeps them with the chat; needs a retrieval.
    void setFolders(app::ChatFolders* folders);
    bool attachFolder(const QString& path);
    void attachFolderWithDialog();
    QString folderLine(int index) const; // as the strip shows it
    bool isSearchingFiles() const { return m_retrieveTicket != 0; }
    void attachDocuments(const QStringList& paths);
    void attachDocumentsWithDialog();
    QList<app::ChatDocument> attachedDocuments() const;
    // Files read elsewhere (an MCP server's resources) for the next message, checked against the
    // same limits; `problems` (what could not be read) are said with statusMessage.
    void addDocuments(const QList<app::ChatDocument>& documents, const QStringList& problems = {});
    void removeDocument(int index);
    QList<app::ChatDocument> messageDocuments(int index) const;
    // Text put into the input at its cursor (an MCP prompt filled in), to be read and sent.
    void insertDraft(const QString& text);
    QString draftText() const;

    // MCP tools (chat_view_tools.cpp): the runner whose tools replies are offered (owned by the
    // caller; none: no tools). A reply's calls show in the transcript with Allow once / Always
    // allow / Deny; each result is stored as a "tool" message and, once every call of the reply
    // has one, the model answers again (at most ChatToolRunner::kMaxRounds times per message).
    void setToolRunner(app::ChatToolRunner* runner);
    // A click on a call's Allow once / Always allow / Deny (callId as the reply wrote it).
    void decideToolCall(const QString& callId, const QString& decision); // "once", "always", "deny"
    QStringList waitingToolCalls() const;

    // The default sampling and system prompt (the settings page edits them): used by chats
    // that have no settings of their own.
    void setSampling(const app::Sampling& sampling);
    void setSystemPrompt(const QString& text);

    // This chat's own settings (the chat settings dialog); stored with the conversation.
    void setChatSettings(const QString& systemPrompt, bool customSampling, const app::Sampling& sampling);
    void openChatSettings();
    app::Sampling currentSampling() const { return m_sampling; }
    QString currentSystemPrompt() const { return m_systemPrompt; }

    // Edit and resend: puts message `index` of the transcript (a user message) into the input;
    // the next send replaces it and everything after it.
    void editMessage(int index);
    void cancelEdit();
    bool isEditing() const { return m_editingId != 0; }

    // A click on one of the transcript's links (copy code, copy message, edit, or a web link).
    void activateLink(const QUrl& url);
    QStringList codeBlocks() const { return m_codeBlocks; }

    void renameConversation(qint64 id, const QString& title);
    void deleteConversation(qint64 id);

    // A reply's reasoning block: open while the reasoning is written; once the answer starts it
    // closes unless this is false (then it stays open). A click on its header toggles it.
    void setCollapseReasoning(bool collapse);
    bool collapsesReasoning() const { return m_collapseReasoning; }
    // Message `index`'s reasoning block (index == messageCount(): the reply being written).
    void toggleReasoning(int index);
    bool isReasoningExpanded(int index) const;
    int messageCount() const { return int(m_messages.size()); }

    // What the transcript shows (for tests): the Markdown source.
    QString transcriptMarkdown() const;
    bool isGenerating() const { return m_activeRequest != 0; }
    quint64 activeRequest() const { return m_activeRequest; }
    qint64 conversationId() const { return m_conversationId; }

    void newChat();
    void openConversation(qint64 id);
    void sendText(const QString& text); // as if typed and Enter pressed
    void stop();
    // Replaces the last reply (in the store too) with a new one; a fresh random seed unless the
    // chat's sampling fixes a non-zero one.
    void regenerate();
    void reloadConversations();

    // The seed the last reply was sampled with (the chat's own, or drawn when it is 0).
    quint64 lastSeed() const { return m_lastSeed; }
    // Whether Regenerate is offered now (the last message is a reply whose row is stored).
    bool canRegenerate() const;
    // The statistics line and the context bar of the chat shown (capacity 0: no model loaded).
    QString statsText() const;
    int contextUsed() const { return m_contextUsed; }
    // The context bar's text ("context 120 / 4096 tokens", "context: no model loaded", a remote
    // model's "<model> (remote) · context managed by <provider>").
    QString contextText() const;
    int contextCapacity() const;
    QString inputPlaceholder() const;
    bool canSend() const;

    // Context full: the last send did not fit the model's context. continueWithOldestDropped()
    // resends with the oldest turns left out of the request (the system prompt kept; the store
    // keeps them all); the transcript marks where the model's view starts.
    bool isContextFull() const { return m_contextFull; }
    void continueWithOldestDropped();
    // Index of the first message the model sees (0: all of them).
    int modelViewStart() const { return m_viewStart; }

    // A widget (the model picker) shown above the transcript; replaces the previous one (which
    // is deleted). Null removes it.
    void setHeaderWidget(QWidget* widget);
    QWidget* headerWidget() const { return m_header; }

    // Writes conversation `id` as "markdown" or "json" to `path` (async: exportFinished).
    void exportConversation(qint64 id, const QString& path, const QString& format);
    // Reads a JSON export and stores it as a new conversation, then opens it (async:
    // importFinished; a bad file says why and stores nothing).
    void importConversation(const QString& path);
    // The dialogs behind the menu entries and Ctrl+E.
    void exportWithDialog(qint64 id);
    void importWithDialog();

    // Shortcut actions: Ctrl+Shift+C, Ctrl+Up, Ctrl+L.
    void copyLastReply();
    void editLastUserMessage();
    void focusInput();

    // Images for the next message (chat_view_images.cpp): the attach button's file dialog,
    // pasted and dropped images. Files are read off the GUI thread; each is checked (at most
    // app::kMaxImageBytes, a PNG, JPEG, WebP or GIF) and at most app::kMaxImagesPerMessage go
    // with one message; what is refused is said with statusMessage. Only a vision model (or a
    // remote one) takes them: otherwise attaching is refused with the reason.
    void attachFiles(const QStringList& paths);
    void attachImages(const QList<QByteArray>& images);
    // Images (or image files) in a paste or a drop; false when it holds none.
    bool attachFromMimeData(const QMimeData* data);
    void removeAttachment(int index);
    QList<QByteArray> attachedImages() const;
    void attachWithDialog();
    // Whether the model loaded takes images, and if not, why ("" when it does).
    bool canAttachImages() const { return attachRefusal().isEmpty(); }
    QString attachRefusal() const;
    // The images of message `index` of the transcript.
    QList<QByteArray> messageImages(int index) const;

    // The model the idle timer unloaded ("" : none): while nothing is loaded, Send stays on and
    // sending asks for it again (reloadRequested), then sends the message once it is loaded.
    void setModelToReload(const QString& path);
    QString modelToReload() const { return m_reloadPath; }

Q_SIGNALS:
    void reloadRequested(const QString& path);
    void statusMessage(const QString& text, hearth::ui::StatusLevel level);
    // A line said with statusMessage no longer holds (the edit it described ended).
    void statusWithdrawn(const QString& text);
    void replyFinished(const QString& text);
    // error empty on success.
    void exportFinished(const QString& path, const QString& error);
    void importFinished(qint64 conversationId, const QString& error);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    QString m_reloadPath;     // see setModelToReload
    QString m_afterLoadText;  // sent once the reloaded model is ready
    bool m_sendAfterLoad = false; // so is a message of images alone (no text)

private:
    struct Message {
        qint64 id = 0;
        QString role;
        QString content;
        int tokens = 0;
        double ttftMs = 0.0;
        double tokensPerSecond = 0.0;
        QString reasoning;
        double reasoningMs = 0.0;
        bool reasoningOpen = false;
        QString state = QStringLiteral("complete"); // as stored (see app::StoredMessage)
        QString error;         // a failed reply's reason
        int contextTokens = 0;
        quint64 recordKey = 0; // the recorder's key while its row id is unknown
        QList<QByteArray> images; // a user message's, as attached
        QList<app::ChatToolCall> toolCalls; // an assistant reply's
        QString toolCallId;                 // a "tool" message's
        QList<app::ChatDocument> documents; // a user message's files, as text
    };
    // A finished message's Markdown, kept while nothing it depends on changes.
    struct Rendered {
        QString source;       // the content it was made from
        int firstBlock = -1;  // the number of its first code block
        bool reasoningOpen = false;
        bool editing = false;
        bool viewStart = false;
        bool last = false;
        qsizetype images = 0;
        QString calls;        // the tool calls' Markdown (their state changes it)
        QString reasoning;
        qint64 id = 0;
        QString state;
        QString error;
        TranscriptPiece piece;
        QStringList blocks;
    };
    struct ExportJob {
        QString path;
        QString format;
        app::Conversation conversation;
    };

    void appendUserMessage(const QString& text);
    void startReply();
    void render();
    void scheduleRender();
    void updateButtons();
    void onToken(quint64 id, const QString& text);
    void onReasoning(quint64 id, const QString& text);
    bool streamReasoningOpen() const;
    double streamReasoningMs() const;
    void onFinished(quint64 id, const QString& reason, const app::GenerationUsage& usage);
    void onFailed(quint64 id, const QString& message);
    void showListMenu(qint64 id, const QPoint& globalPos);
    void showTranscriptMenu(const QPoint& at);
    void applyConversationSettings(qint64 id);
    void ensureRecording();
    void detachReply();
    app::StoredMessage streamSnapshot() const;
    void showChatState();
    void updateContextBar();
    TranscriptPiece messagePiece(int index);
    void followStore(); // chat_view_store.cpp
    void forgetRendered();
    void onChatTrimmed(quint64 id, int dropped);
    void finishExport(const ExportJob& job, const QList<app::StoredMessage>& messages);
    void setUpImages();
    void updateAttach();
    QString imagesMarkdown(const QList<QByteArray>& images);
    bool wantsDrop(const QMimeData* data) const;
    void endEditStatus();
    void setUpDocuments();
    void setUpFolders();
    void storeUserMessage(app::StoredMessage message);
    QString sourcesMarkdown(int replyIndex) const;
    QString documentsMarkdown(const QList<app::ChatDocument>& documents) const;
    QString toolCallsMarkdown(int index) const;
    QString toolResultMarkdown(int index) const;
    void onToolCallFinished(const app::ChatToolCall& call, const QString& result, bool isError);
    void onToolRoundFinished(bool stopped);
    void resumeToolCalls();
    void startToolRound(const QList<app::ChatToolCall>& calls);

    app::EngineHost* m_engine;
    app::Store* m_store;
    app::Sampling m_sampling;            // what new replies of this chat use
    QString m_systemPrompt;
    bool m_customSampling = false;       // this chat has its own sampling
    app::Sampling m_defaultSampling;
    QString m_defaultSystemPrompt;
    QHash<qint64, app::Conversation> m_conversations; // from the last listing

    ConversationList* m_conversationList = nullptr;
    ChatTranscript* m_transcript = nullptr;
    ChatComposer* m_composer = nullptr;
    QProgressBar* m_context = nullptr;
    QTimer* m_renderTimer = nullptr;

    qint64 m_conversationId = 0;
    QList<Message> m_messages;
    QString m_streamText;
    QString m_streamReasoning;
    std::pair<int, int> m_promptRead{0, 0}; // the reply's prompt read so far: done, total
    QElapsedTimer m_thinkClock;            // from the reply's first reasoning piece
    double m_thoughtMs = -1.0;             // set when its answer starts (-1: still thinking)
    std::optional<bool> m_streamOpenChoice; // the user's click on the block being written
    bool m_collapseReasoning = true;
    QString m_error;
    quint64 m_activeRequest = 0;
    qint64 m_replacing = 0;           // regenerate: the stored reply being replaced
    QString m_pendingText;            // waiting for its conversation to be created
    quint64 m_createTicket = 0;
    quint64 m_userTicket = 0;
    QString m_userText;
    quint64 m_loadTicket = 0;
    QStringList m_codeBlocks;             // of the last render, by link number
    qint64 m_editingId = 0;               // the stored user message being edited
    QString m_editingStatus;              // the status line said while editing
    QString m_editText;                   // the edited text, while older messages are deleted
    quint64 m_deleteTicket = 0;

    app::ReplyRecorder* m_recorder = nullptr;
    quint64 m_replyKey = 0;             // the recorder's key of the reply being written
    qint64 m_replyConversation = 0;
    QElapsedTimer m_lastSave;           // of the reply being written
    std::optional<Message> m_replaced;  // regenerate: the reply being replaced (back on failure)
    quint64 m_lastSeed = 0;
    int m_contextUsed = 0;
    QString m_statsText;
    bool m_contextFull = false;
    bool m_dropOldest = false;          // this chat's requests leave out turns to fit
    int m_viewStart = 0;
    QVBoxLayout* m_headerLayout = nullptr;
    QWidget* m_header = nullptr;
    QHash<quint64, ExportJob> m_exports;  // by the load ticket of its messages
    quint64 m_importTicket = 0;
    QList<app::StoredMessage> m_importMessages;
    QList<Rendered> m_rendered;          // by message index

    app::ImageFileReader* m_imageReader = nullptr;
    app::DocumentReader* m_documentReader = nullptr;
    app::ChatRetrieval* m_retrieval = nullptr;
    app::ChatFolders* m_folders = nullptr;
    quint64 m_retrieveTicket = 0;                 // searching the chat's files for the question
    app::StoredMessage m_searching;               // the question waiting for that search
    qint64 m_userConversation = 0;                // the chat the question being stored belongs to
    QList<app::ChatDocument> m_outgoingDocuments; // of the message being sent, until it is appended
    QList<app::ChatDocument> m_userDocuments;     // of the message being committed
    app::ChatToolRunner* m_tools = nullptr;
    QJsonArray m_offeredTools;            // of the reply being written
    QHash<quint64, QString> m_toolTickets; // a tool message being stored -> its call id
    quint64 m_readTicket = 0;
    QList<QByteArray> m_outgoingImages;   // of the message being sent, until it is appended
    QList<QByteArray> m_userImages;       // of the message being committed (with m_userText)
};

} // namespace hearth::ui
