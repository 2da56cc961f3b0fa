// Conversation export and import: Markdown shape, JSON round trip (every field back, images
// too), hostile and malformed JSON refused with a message saying what is wrong; and the reply recorder on a
// real store: the row is incomplete while written, updated at most once an interval, stopped or
// complete at the end, and still incomplete after the store goes away mid-reply.
#include "services/chat_export.h"
#include "services/reply_recorder.h"
#include "services/store.h"
#include "store_replies.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;

namespace {

ExportedChat sampleChat() {
    ExportedChat chat;
    chat.conversation.title = QStringLiteral("Dragons & \"quotes\"");
    chat.conversation.model = QStringLiteral("/models/qwen.gguf");
    chat.conversation.systemPrompt = QStringLiteral("Be brief.");
    chat.conversation.samplingJson = QStringLiteral("{\"max_tokens\":64,\"seed\":7}");
    chat.conversation.created = 1700000000000;
    chat.conversation.updated = 1700000005000;
    StoredMessage user;
    user.role = QStringLiteral("user");
    user.content = QStringLiteral("Write code:\n```python\nprint('hi')\n```\nüñí 🐉");
    user.created = 1700000001000;
    StoredMessage reply;
    reply.role = QStringLiteral("assistant");
    reply.content = QStringLiteral("Here:\n```python\nprint('hi')\n```");
    reply.reasoning = QStringLiteral("They want Python.\n\nKeep it short.");
    reply.reasoningMs = 1234.5;
    reply.tokens = 17;
    reply.ttftMs = 40.0;
    reply.tokensPerSecond = 88.5;
    reply.contextTokens = 321;
    reply.state = QStringLiteral("stopped");
    reply.created = 1700000002000;
    chat.messages = {user, reply};
    return chat;
}

QList<StoredMessage> load(Store& store, qint64 conversation) { return hearth::test::storedMessages(store, conversation); }

qint64 createConversation(Store& store) {
    const qint64 id = hearth::test::createdConversation(store, {});
    return id < 0 ? 0 : id;
}

} // namespace

class TestChatExport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void markdownShowsTheConversation() {
        const QString md = chatToMarkdown(sampleChat());
        QVERIFY(md.startsWith(QStringLiteral("# Dragons & \"quotes\"\n")));
        QVERIFY(md.contains(QStringLiteral("## System\n\nBe brief.")));
        QVERIFY(md.contains(QStringLiteral("## You\n\nWrite code:\n```python\nprint('hi')\n```")));
        QVERIFY(md.contains(QStringLiteral("## Assistant\n\n> They want Python.\n>\n> Keep it short.\n\nHere:")));
        QVERIFY(md.contains(QStringLiteral("*(stopped)*")));
        QVERIFY(md.indexOf(QStringLiteral("## You")) < md.indexOf(QStringLiteral("## Assistant")));
    }

    void jsonRoundTrip() {
        const ExportedChat chat = sampleChat();
        const QByteArray json = chatToJson(chat);
        hearth::Result<ExportedChat> back = chatFromJson(json);
        QVERIFY2(back.isOk(), back ? "" : back.status().message().c_str());
        QCOMPARE(back->conversation.title, chat.conversation.title);
        QCOMPARE(back->conversation.model, chat.conversation.model);
        QCOMPARE(back->conversation.systemPrompt, chat.conversation.systemPrompt);
        QCOMPARE(back->conversation.samplingJson, chat.conversation.samplingJson);
        QCOMPARE(back->conversation.created, chat.conversation.created);
        QCOMPARE(back->conversation.updated, chat.conversation.updated);
        QCOMPARE(back->messages.size(), 2);
        for (int i = 0; i < 2; ++i) {
            const StoredMessage& a = chat.messages[i];
            const StoredMessage& b = back->messages[i];
            QCOMPARE(b.role, a.role);
            QCOMPARE(b.content, a.content);
            QCOMPARE(b.reasoning, a.reasoning);
            QCOMPARE(b.reasoningMs, a.reasoningMs);
            QCOMPARE(b.tokens, a.tokens);
            QCOMPARE(b.ttftMs, a.ttftMs);
            QCOMPARE(b.tokensPerSecond, a.tokensPerSecond);
            QCOMPARE(b.contextTokens, a.contextTokens);
            QCOMPARE(b.state, a.state);
            QCOMPARE(b.created, a.created);
        }
        // And again: the same text.
        QCOMPARE(chatToJson(*back), json);
    }

    // A reply that failed before its first token: both formats say so and why; JSON reads it back.
    void failedReplyKeepsItsReason() {
        ExportedChat chat = sampleChat();
        chat.messages[1].content.clear();
        chat.messages[1].reasoning.clear();
        chat.messages[1].state = QStringLiteral("failed");
        chat.messages[1].error = QStringLiteral("the engine stopped");
        QVERIFY(chatToMarkdown(chat).contains(QStringLiteral("*(failed: the engine stopped)*")));
        hearth::Result<ExportedChat> back = chatFromJson(chatToJson(chat));
        QVERIFY2(back.isOk(), back ? "" : back.status().message().c_str());
        QCOMPARE(back->messages.value(1).state, QStringLiteral("failed"));
        QCOMPARE(back->messages.value(1).error, QStringLiteral("the engine stopped"));
        QVERIFY(back->messages.value(0).error.isEmpty());
    }

    // A question's attached files, a reply's tool calls and the tool's result: both formats show
    // them; JSON reads them back.
    void documentsAndToolCallsAreExportedAndImported() {
        ExportedChat chat = sampleChat();
        chat.messages[1].toolCalls = {ChatToolCall{QStringLiteral("call_x"), QStringLiteral("fs__read"), QStringLiteral("{\"path\":\"a.txt\"}")}};
        StoredMessage result;
        result.role = QStringLiteral("tool");
        result.content = QStringLiteral("the file's text");
        result.toolCallId = QStringLiteral("call_x");
        chat.messages << result;
        chat.messages[0].documents = {ChatDocument{QStringLiteral("notes.md"), QStringLiteral("use ``` fences")}};
        const QString md = chatToMarkdown(chat);
        QVERIFY2(md.contains(QStringLiteral("*Attached file: notes.md*\n\n````\nuse ``` fences\n````")), qPrintable(md));
        QVERIFY2(md.contains(QStringLiteral("*Tool call* `fs__read` `{\"path\":\"a.txt\"}`")), qPrintable(md));
        QVERIFY(md.contains(QStringLiteral("## Tool\n\nthe file's text")));
        hearth::Result<ExportedChat> back = chatFromJson(chatToJson(chat));
        QVERIFY2(back.isOk(), back ? "" : back.status().message().c_str());
        QCOMPARE(back->messages.size(), 3);
        QCOMPARE(back->messages[0].documents, chat.messages[0].documents);
        QCOMPARE(back->messages[1].toolCalls.size(), 1);
        QCOMPARE(back->messages[1].toolCalls[0].id, QStringLiteral("call_x"));
        QCOMPARE(back->messages[1].toolCalls[0].arguments, QStringLiteral("{\"path\":\"a.txt\"}"));
        QCOMPARE(back->messages[2].role, QStringLiteral("tool"));
        QCOMPARE(back->messages[2].toolCallId, QStringLiteral("call_x"));
        // A call without its id or name is refused with the reason.
        const QByteArray broken = chatToJson(chat).replace("\"id\": \"call_x\"", "\"id\": \"\"");
        hearth::Result<ExportedChat> refused = chatFromJson(broken);
        QVERIFY(!refused.isOk());
        QVERIFY2(QString::fromStdString(refused.status().message()).contains(QStringLiteral("tool call needs")),
                 refused.status().message().c_str());
    }

    // A message's images: Markdown shows them inline as data URIs, before the text; JSON keeps
    // their bytes (base64) and type, and a store import keeps them.
    void imagesAreExportedAndImported() {
        ExportedChat chat = sampleChat();
        const QByteArray png = QByteArray("\x89PNG\r\n\x1a\n", 8) + QByteArray("\0\1 pixels", 9);
        const QByteArray gif = QByteArray("GIF89a") + QByteArray(100, '\7');
        chat.messages[0].images = {png, gif};
        const QString md = chatToMarkdown(chat);
        const QString pngUri = QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
        QVERIFY(md.contains(QStringLiteral("## You\n\n![image 1](%1)\n\n![image 2](data:image/gif;base64,").arg(pngUri)));
        QVERIFY(md.indexOf(QStringLiteral("![image 2]")) < md.indexOf(QStringLiteral("Write code:")));
        QVERIFY(!md.mid(md.indexOf(QStringLiteral("## Assistant"))).contains(QStringLiteral("![image")));

        const QByteArray json = chatToJson(chat);
        const QJsonObject first = QJsonDocument::fromJson(json).object()[QStringLiteral("messages")].toArray()[0].toObject();
        QCOMPARE(first[QStringLiteral("images")].toArray()[0].toObject()[QStringLiteral("mime_type")].toString(),
                 QStringLiteral("image/png"));
        QVERIFY(!QJsonDocument::fromJson(json).object()[QStringLiteral("messages")].toArray()[1].toObject().contains(
            QStringLiteral("images")));
        hearth::Result<ExportedChat> back = chatFromJson(json);
        QVERIFY2(back.isOk(), back ? "" : back.status().message().c_str());
        QCOMPARE(back->messages[0].images, (QList<QByteArray>{png, gif}));
        QVERIFY(back->messages[1].images.isEmpty());
        QCOMPARE(chatToJson(*back), json);

        // Through a store: imported messages keep their images.
        QTemporaryDir dir;
        Store store;
        QSignalSpy opened(&store, &Store::opened);
        store.open(dir.filePath(QStringLiteral("h.db")));
        QVERIFY(opened.wait(5000));
        const qint64 id = createConversation(store);
        QVERIFY(id > 0);
        QSignalSpy committed(&store, &Store::committed);
        for (StoredMessage m : back->messages) {
            m.conversationId = id;
            store.appendMessage(m);
        }
        const QList<StoredMessage> stored = load(store, id);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[0].images, (QList<QByteArray>{png, gif}));
    }

    // A name typed without the format's ending gets it; one that has it (any case) is kept.
    void exportGetsItsEnding() {
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip"), QStringLiteral("json")), QStringLiteral("/tmp/trip.json"));
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip"), QStringLiteral("markdown")), QStringLiteral("/tmp/trip.md"));
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip.JSON"), QStringLiteral("json")), QStringLiteral("/tmp/trip.JSON"));
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip.md"), QStringLiteral("markdown")), QStringLiteral("/tmp/trip.md"));
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip.markdown"), QStringLiteral("markdown")),
                 QStringLiteral("/tmp/trip.markdown"));
        QCOMPARE(exportPathFor(QStringLiteral("/tmp/trip.md"), QStringLiteral("json")), QStringLiteral("/tmp/trip.md.json"));

        QTemporaryDir dir;
        const hearth::Result<QString> json = writeChatExport(sampleChat(), dir.filePath(QStringLiteral("chat")), QStringLiteral("json"));
        QVERIFY2(json, json ? "" : json.status().message().c_str());
        QCOMPARE(*json, dir.filePath(QStringLiteral("chat.json")));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("chat"))));
        QFile file(*json);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const hearth::Result<ExportedChat> back = chatFromJson(file.readAll());
        QVERIFY(back);
        QCOMPARE(back->messages.size(), 2);
        const hearth::Result<QString> md = writeChatExport(sampleChat(), dir.filePath(QStringLiteral("chat")), QStringLiteral("markdown"));
        QVERIFY(md);
        QCOMPARE(*md, dir.filePath(QStringLiteral("chat.md")));
        const hearth::Result<QString> refused =
            writeChatExport(sampleChat(), dir.filePath(QStringLiteral("no/such/folder/chat")), QStringLiteral("json"));
        QVERIFY(!refused);
        QVERIFY(QString::fromStdString(refused.status().message()).contains(QStringLiteral("chat.json")));
    }

    void badJsonIsRefusedWithAReason_data() {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("says");
        QTest::newRow("empty") << QByteArray() << QStringLiteral("not JSON");
        QTest::newRow("garbage") << QByteArray("\x00\xff{{{", 5) << QStringLiteral("not JSON");
        QTest::newRow("truncated") << chatToJson(sampleChat()).left(120) << QStringLiteral("not JSON");
        QTest::newRow("array") << QByteArray("[1,2]") << QStringLiteral("not a JSON object");
        QTest::newRow("no format") << QByteArray("{\"messages\":[]}") << QStringLiteral("not a Hearth chat export");
        QTest::newRow("other format") << QByteArray("{\"format\":\"chatgpt\",\"version\":1,\"messages\":[]}")
                                      << QStringLiteral("not a Hearth chat export");
        QTest::newRow("version") << QByteArray("{\"format\":\"hearth-chat\",\"version\":99,\"messages\":[]}")
                                 << QStringLiteral("unsupported version");
        QTest::newRow("no messages") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1}") << QStringLiteral("\"messages\"");
        QTest::newRow("title type") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"title\":5,\"messages\":[]}")
                                    << QStringLiteral("\"title\" has the wrong type");
        QTest::newRow("message type")
            << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":[\"hi\"]}") << QStringLiteral("message 1: not an object");
        QTest::newRow("role") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                                            "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"root\",\"content\":\"b\"}]}")
                              << QStringLiteral("message 2: unknown role");
        QTest::newRow("content") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                                               "[{\"role\":\"user\",\"content\":{\"x\":1}}]}")
                                 << QStringLiteral("\"content\" is missing or not text");
        QTest::newRow("tokens type") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                                                   "[{\"role\":\"assistant\",\"content\":\"a\",\"tokens\":\"many\"}]}")
                                     << QStringLiteral("\"tokens\" has the wrong type");
        QTest::newRow("state") << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                                             "[{\"role\":\"assistant\",\"content\":\"a\",\"state\":\"evil\"}]}")
                               << QStringLiteral("unknown state");
        QTest::newRow("image not base64")
            << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                          "[{\"role\":\"user\",\"content\":\"a\",\"images\":[{\"data\":\"@@@\"}]}]}")
            << QStringLiteral("message 1: image 1 is not base64");
        QTest::newRow("image not an image")
            << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                          "[{\"role\":\"user\",\"content\":\"a\",\"images\":[{\"data\":\"aGVsbG8=\"}]}]}")
            << QStringLiteral("not a PNG, JPEG, WebP or GIF image");
        QTest::newRow("images type")
            << QByteArray("{\"format\":\"hearth-chat\",\"version\":1,\"messages\":"
                          "[{\"role\":\"user\",\"content\":\"a\",\"images\":\"x\"}]}")
            << QStringLiteral("\"images\" has the wrong type");
        QByteArray deep;
        for (int i = 0; i < 5000; ++i) deep += '[';
        QTest::newRow("deep nesting") << deep << QStringLiteral("not JSON");
    }

    void badJsonIsRefusedWithAReason() {
        QFETCH(QByteArray, json);
        QFETCH(QString, says);
        hearth::Result<ExportedChat> r = chatFromJson(json);
        QVERIFY(!r.isOk());
        const QString message = QString::fromStdString(r.status().message());
        QVERIFY2(message.contains(says), qPrintable(message));
        QVERIFY(message.startsWith(QStringLiteral("chat import: ")));
    }

    void outOfRangeNumbersReadAsZero() {
        hearth::Result<ExportedChat> r = chatFromJson(
            "{\"format\":\"hearth-chat\",\"version\":1,\"messages\":[{\"role\":\"assistant\",\"content\":\"a\","
            "\"tokens\":1e300,\"ttft_ms\":-5,\"context_tokens\":3e9}]}");
        QVERIFY(r.isOk());
        QCOMPARE(r->messages[0].tokens, 0);
        QCOMPARE(r->messages[0].ttftMs, 0.0);
        QCOMPARE(r->messages[0].contextTokens, 0);
        QCOMPARE(r->messages[0].state, QStringLiteral("complete"));
        QCOMPARE(r->conversation.samplingJson, QStringLiteral("{}"));
    }

    // A reply written as it grows: incomplete from its first write, updated at most once per
    // interval, its final state at the end; a regenerate overwrites the same row.
    void recorderWritesAsTheReplyGrows() {
        QTemporaryDir dir;
        Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        const qint64 conv = createConversation(store);
        QVERIFY(conv > 0);
        ReplyRecorder recorder(&store);
        recorder.setInterval(300);
        QSignalSpy recorded(&recorder, &ReplyRecorder::recorded);
        QSignalSpy updates(&store, &Store::messageUpdated);
        const quint64 key = recorder.begin(conv);
        QVERIFY(key != 0);
        StoredMessage s;
        s.content = QStringLiteral("Once");
        recorder.update(key, s); // before the row exists: written once it does
        QVERIFY(recorded.wait(5000));
        const qint64 id = recorder.messageId(key);
        QVERIFY(id > 0);
        QTRY_COMPARE_WITH_TIMEOUT(load(store, conv).value(0).content, QStringLiteral("Once"), 3000);
        QCOMPARE(load(store, conv).value(0).state, QStringLiteral("incomplete"));
        // Many updates in a burst: one write per interval, the latest text wins.
        updates.clear();
        for (int i = 0; i < 50; ++i) {
            s.content += QStringLiteral(" upon");
            recorder.update(key, s);
        }
        QTest::qWait(800);
        QVERIFY2(updates.size() <= 3, qPrintable(QString::number(updates.size())));
        QCOMPARE(load(store, conv).value(0).content, s.content);
        QCOMPARE(load(store, conv).value(0).state, QStringLiteral("incomplete"));
        s.content = QStringLiteral("Once upon a time.");
        s.tokens = 5;
        s.contextTokens = 40;
        recorder.finish(key, s, QStringLiteral("complete"));
        QTRY_COMPARE_WITH_TIMEOUT(load(store, conv).value(0).state, QStringLiteral("complete"), 3000);
        QCOMPARE(load(store, conv).value(0).contextTokens, 40);
        QCOMPARE(recorder.messageId(key), id);

        // Regenerate: the same row, incomplete again, then stopped.
        const quint64 again = recorder.begin(conv, id);
        QCOMPARE(recorder.messageId(again), id);
        QTRY_COMPARE_WITH_TIMEOUT(load(store, conv).value(0).state, QStringLiteral("incomplete"), 3000);
        s.content = QStringLiteral("The end");
        recorder.finish(again, s, QStringLiteral("stopped"));
        QTRY_COMPARE_WITH_TIMEOUT(load(store, conv).value(0).state, QStringLiteral("stopped"), 3000);
        QCOMPARE(load(store, conv).size(), 1);
    }

    // An update addressed by the append's ticket, queued before the id came back, lands; an
    // unknown ticket is an error, not a write to some other row.
    void updateByAppendTicket() {
        QTemporaryDir dir;
        Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        const qint64 conv = createConversation(store);
        QSignalSpy failed(&store, &Store::failed);
        QSignalSpy updated(&store, &Store::messageUpdated);
        StoredMessage m;
        m.conversationId = conv;
        m.role = QStringLiteral("assistant");
        m.state = QStringLiteral("incomplete");
        const quint64 append = store.appendMessage(m);
        m.content = QStringLiteral("written before the commit was seen");
        m.state = QStringLiteral("complete");
        store.updateAppendedMessage(append, m);
        const QList<StoredMessage> list = load(store, conv); // queued after both
        QCOMPARE(list.size(), 1);
        QCOMPARE(list[0].content, m.content);
        QCOMPARE(list[0].state, QStringLiteral("complete"));
        QCOMPARE(updated.size(), 1);
        const quint64 bad = store.updateAppendedMessage(append + 1000, m);
        QTRY_COMPARE(failed.size(), 1);
        QCOMPARE(failed[0].at(0).toULongLong(), bad);
        QVERIFY(failed[0].at(1).toString().contains(QStringLiteral("no message was appended")));
    }

    // The app dies mid-reply (the store and recorder go away without finish): the partial reply
    // is there, marked incomplete, when the database is opened again.
    void replyLeftIncompleteSurvives() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("hearth.db"));
        qint64 conv = 0;
        {
            Store store;
            store.open(path);
            conv = createConversation(store);
            ReplyRecorder recorder(&store);
            recorder.setInterval(0);
            QSignalSpy recorded(&recorder, &ReplyRecorder::recorded);
            const quint64 key = recorder.begin(conv);
            QVERIFY(recorded.wait(5000));
            StoredMessage s;
            s.content = QStringLiteral("The dragon was");
            recorder.update(key, s);
        }
        Store store;
        store.open(path);
        const QList<StoredMessage> messages = load(store, conv);
        QCOMPARE(messages.size(), 1);
        QCOMPARE(messages[0].content, QStringLiteral("The dragon was"));
        QCOMPARE(messages[0].state, QStringLiteral("incomplete"));
    }
};

QTEST_GUILESS_MAIN(TestChatExport)
#include "test_chat_export.moc"
