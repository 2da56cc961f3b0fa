// RemoteClient and ProviderStore against a real hearth server on loopback serving stories260K:
// model lists, a streamed chat equal to the server's own answer, images sent as image_url parts,
// stop mid-stream, clear errors,
// keys in an owner-only file or a (stand-in) keyring, and the provider list kept across restarts.
#include "services/chat_tools.h"
#include "services/remote_provider.h"

#include "../server/http_test_support.h"
#include "../server/loopback_server.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/server.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <thread>

using namespace hearth::app;

namespace {

const char* kModel = "models/stories260K.gguf";
const char* kServerKey = "remote-key";

int fileMode(const QString& path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0) return -1;
    return int(st.st_mode & 0777);
}

// Everything one chat sent, waited for until it ends.
struct ChatRecord {
    QString text;
    int pieces = 0;
    bool ended = false;
    QString reason;
    QString error;
    GenerationUsage usage;
    int piecesAfterEnd = 0;
};

void record(RemoteClient& client, quint64 id, ChatRecord& r) {
    QObject::connect(&client, &RemoteClient::tokenReceived, &client, [&r, id](quint64 i, const QString& t) {
        if (i != id) return;
        if (r.ended) ++r.piecesAfterEnd;
        r.text += t;
        ++r.pieces;
    });
    QObject::connect(&client, &RemoteClient::finished, &client,
                     [&r, id](quint64 i, const QString& reason, const GenerationUsage& u) {
                         if (i != id) return;
                         r.ended = true;
                         r.reason = reason;
                         r.usage = u;
                     });
    QObject::connect(&client, &RemoteClient::failed, &client, [&r, id](quint64 i, const QString& m) {
        if (i != id) return;
        r.ended = true;
        r.error = m;
    });
}

bool waitFor(const std::function<bool()>& done, int ms = 20000) {
    QElapsedTimer t;
    t.start();
    while (!done() && t.elapsed() < ms) QTest::qWait(10);
    return done();
}

} // namespace

class TestRemoteProvider : public QObject {
    Q_OBJECT
    hearth::test::LoopbackServer m_remote;
    QTemporaryDir m_dir;
    RemoteProvider m_provider;
    std::unique_ptr<ProviderStore> m_store;

private Q_SLOTS:
    void initTestCase() {
        qputenv("HEARTH_NO_KEYRING", "1"); // never the real keyring of whoever runs the tests
        HEARTH_REQUIRE_TEST_FILE(kModel);
        QVERIFY(m_dir.isValid());
        const std::string started = hearth::test::startLoopbackServer(m_remote, hearth::test::testDataPath(kModel), 2048,
                                                                      "stories260K", kServerKey);
        QVERIFY2(started.empty(), started.c_str());
        m_provider.name = QStringLiteral("loopback");
        m_provider.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(m_remote.port()));
        m_store = std::make_unique<ProviderStore>(m_dir.path());
        QCOMPARE(m_store->keyBackend(), ProviderStore::KeyBackend::File);
        QVERIFY(m_store->setProvider(m_provider));
        QVERIFY2(m_store->setApiKey(m_provider.name, QString::fromLatin1(kServerKey)),
                 qPrintable(m_store->lastError()));
    }

    void cleanupTestCase() { m_remote.server.reset(); }

    void listsModels() {
        RemoteClient client(m_store.get());
        QSignalSpy listed(&client, &RemoteClient::modelsListed);
        QSignalSpy failed(&client, &RemoteClient::listFailed);
        const quint64 ticket = client.listModels(m_provider);
        QVERIFY(waitFor([&] { return !listed.isEmpty() || !failed.isEmpty(); }));
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(1).toString()));
        QCOMPARE(listed.first().at(0).toULongLong(), ticket);
        QCOMPARE(listed.first().at(1).toStringList(), QStringList{QStringLiteral("stories260K")});

        // Without the key the server refuses, and the message says so.
        RemoteClient keyless;
        QSignalSpy refused(&keyless, &RemoteClient::listFailed);
        keyless.listModels(m_provider);
        QVERIFY(waitFor([&] { return !refused.isEmpty(); }));
        const QString message = refused.first().at(1).toString();
        QVERIFY2(message.contains(QLatin1String("401")) && message.contains(QLatin1String("API key")),
                 qPrintable(message));
    }

    void streamsAChat() {
        const QList<ChatMessage> messages{{QStringLiteral("user"), QStringLiteral("Once upon a time"), {}}};
        // The server's own (non-streamed, greedy) answer.
        const std::string request =
            "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a "
            "time\"}],\"max_tokens\":40,\"temperature\":0}";
        auto direct = hearth::test::postJson(m_remote.port(), "/v1/chat/completions", request,
                                             {{"Authorization", std::string("Bearer ") + kServerKey}});
        QVERIFY(direct && direct->status == 200);
        const QString expected = QString::fromStdString(
            hearth::test::parse(direct->body)["choices"][0]["message"]["content"].get<std::string>());
        QVERIFY(!expected.isEmpty());

        RemoteClient client(m_store.get());
        ChatRecord r;
        const quint64 id = client.sendChat(m_provider, QStringLiteral("stories260K"), messages,
                                           Sampling::greedy(40));
        QVERIFY(id >= (quint64(1) << 48));
        record(client, id, r);
        QVERIFY(waitFor([&] { return r.ended; }));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.text, expected);
        QVERIFY(r.pieces > 1);
        QVERIFY(r.reason == QLatin1String("length") || r.reason == QLatin1String("stop"));
        QVERIFY(r.usage.promptTokens > 0);
        QVERIFY(r.usage.completionTokens > 1);
        QVERIFY(r.usage.timeToFirstTokenMs >= 0.0);
        QVERIFY(client.activeRequests().isEmpty());
    }

    void stopsMidStream() {
        RemoteClient client(m_store.get());
        Sampling s;
        s.maxTokens = 1500;
        s.ignoreEos = true;
        s.seed = 7;
        ChatRecord r;
        const quint64 id = client.sendChat(m_provider, QStringLiteral("stories260K"),
                                           {{QStringLiteral("user"), QStringLiteral("Tell a long story"), {}}}, s);
        record(client, id, r);
        connect(&client, &RemoteClient::tokenReceived, &client, [&](quint64 i, const QString&) {
            if (i == id && r.pieces == 3) client.stop(id);
        });
        QVERIFY(waitFor([&] { return r.ended; }));
        QCOMPARE(r.reason, QStringLiteral("cancelled"));
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(r.pieces, 3);
        QTest::qWait(200);
        QCOMPARE(r.piecesAfterEnd, 0);
        QVERIFY(client.activeRequests().isEmpty());
        // The server dropped the generation: /metrics shows nothing running soon after.
        QVERIFY(waitFor([&] {
            auto c = hearth::test::client(m_remote.port());
            auto m = c.Get("/metrics", {{"Authorization", std::string("Bearer ") + kServerKey}});
            return m && m->body.find("hearth_requests_running 0") != std::string::npos;
        }, 5000));
    }

    void badUrlsFailClearly() {
        RemoteClient client(m_store.get());
        RemoteProvider closed{QStringLiteral("closed"), QUrl(QStringLiteral("http://127.0.0.1:1/v1")), true};
        ChatRecord r;
        const quint64 id = client.sendChat(closed, QStringLiteral("m"), {{QStringLiteral("user"), QStringLiteral("hi"), {}}},
                                           Sampling::greedy(4));
        record(client, id, r);
        QVERIFY(waitFor([&] { return r.ended; }));
        QVERIFY2(r.error.contains(QLatin1String("cannot reach closed")) &&
                     r.error.contains(QLatin1String("127.0.0.1:1")),
                 qPrintable(r.error));

        RemoteProvider schemeless{QStringLiteral("box"), QUrl(QStringLiteral("gpu-box:8000/v1")), true};
        QSignalSpy listFailed(&client, &RemoteClient::listFailed);
        client.listModels(schemeless);
        QVERIFY(listFailed.isEmpty()); // reported after the call returns
        QVERIFY(waitFor([&] { return !listFailed.isEmpty(); }));
        QVERIFY2(listFailed.first().at(1).toString().contains(QLatin1String("http(s)://")),
                 qPrintable(listFailed.first().at(1).toString()));

        // A model the server does not have: its own message comes through.
        ChatRecord missing;
        const quint64 id2 = client.sendChat(m_provider, QStringLiteral("no-such-model"),
                                            {{QStringLiteral("user"), QStringLiteral("hi"), {}}}, Sampling::greedy(4));
        record(client, id2, missing);
        QVERIFY(waitFor([&] { return missing.ended; }));
        // The single-model server serves any name; an error is fine too, a hang or crash is not.
        QVERIFY(missing.error.isEmpty() || missing.error.contains(QLatin1String("loopback")));
    }

    // A message's images go as OpenAI image_url parts (data URIs) before its text: the server
    // reads them, and its text-only model refuses them in words.
    void imagesGoAsImageUrlParts() {
        RemoteClient client(m_store.get());
        ChatMessage user{QStringLiteral("user"), QStringLiteral("What is it?"), {},
                         {QByteArray("\x89PNG\r\n\x1a\n", 8) + QByteArray("pixels")}};
        ChatRecord r;
        const quint64 id = client.sendChat(m_provider, QStringLiteral("stories260K"), {user}, Sampling::greedy(4));
        record(client, id, r);
        QVERIFY(waitFor([&] { return r.ended; }));
        QVERIFY2(r.error.contains(QLatin1String("does not take images")), qPrintable(r.error));
        // Without images the same chat is answered.
        user.images.clear();
        ChatRecord plain;
        const quint64 id2 = client.sendChat(m_provider, QStringLiteral("stories260K"), {user}, Sampling::greedy(4));
        record(client, id2, plain);
        QVERIFY(waitFor([&] { return plain.ended; }));
        QVERIFY2(plain.error.isEmpty(), qPrintable(plain.error));
    }

    void readsReasoningUsageAndErrorsFromAStream() {
        // A stand-in remote sending what reasoning servers send (vLLM, llama-server): reasoning
        // deltas first, CRLF line ends, a comment, usage in the last chunk; or an error event.
        httplib::Server fake;
        std::string lastAuth;
        fake.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
            lastAuth = req.get_header_value("Authorization");
            const bool broken = req.body.find("broken") != std::string::npos;
            res.set_chunked_content_provider("text/event-stream", [broken](size_t, httplib::DataSink& sink) {
                std::string out;
                if (broken) {
                    out = "data: {\"error\":{\"message\":\"the GPU caught fire\"}}\n\n";
                } else {
                    out = ": ping\r\n\r\n"
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Let me \"}}]}\r\n\r\n"
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think.\"}}]}\r\n\r\n"
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\r\n\r\n"
                          "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":\"stop\"}]}\r\n\r\n"
                          "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":6,"
                          "\"prompt_tokens_details\":{\"cached_tokens\":4}}}\r\n\r\n"
                          "data: [DONE]\r\n\r\n";
                }
                sink.write(out.data(), out.size());
                sink.done();
                return true;
            });
        });
        fake.set_keep_alive_max_count(1); // stop() need not wait out idle keep-alive connections
        const int port = fake.bind_to_any_port("127.0.0.1");
        QVERIFY(port > 0);
        std::thread thread([&] { fake.listen_after_bind(); });
        const RemoteProvider provider{QStringLiteral("thinker"),
                                      QUrl(QStringLiteral("http://127.0.0.1:%1/v1/").arg(port)), false};
        ProviderStore keys(m_dir.path());
        keys.setSecretTool(QString());
        QVERIFY(keys.setApiKey(provider.name, QStringLiteral("sk-think")));
        RemoteClient client(&keys);
        QString reasoning;
        connect(&client, &RemoteClient::reasoningReceived, &client,
                [&](quint64, const QString& t) { reasoning += t; });
        ChatRecord r;
        const quint64 id = client.sendChat(provider, QStringLiteral("m"), {{QStringLiteral("user"), QStringLiteral("hi"), {}}},
                                           Sampling::greedy(8));
        record(client, id, r);
        const bool ended = waitFor([&] { return r.ended; });
        ChatRecord bad;
        const quint64 id2 = client.sendChat(provider, QStringLiteral("broken"),
                                            {{QStringLiteral("user"), QStringLiteral("hi"), {}}}, Sampling::greedy(8));
        record(client, id2, bad);
        const bool badEnded = waitFor([&] { return bad.ended; });
        fake.stop();
        thread.join();
        QVERIFY(ended && badEnded);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QCOMPARE(reasoning, QStringLiteral("Let me think."));
        QCOMPARE(r.text, QStringLiteral("Hello there"));
        QCOMPARE(r.reason, QStringLiteral("stop"));
        QCOMPARE(r.usage.promptTokens, 11);
        QCOMPARE(r.usage.completionTokens, 6);
        QCOMPARE(r.usage.cachedPromptTokens, 4);
        QCOMPARE(lastAuth, std::string("Bearer sk-think"));
        QVERIFY2(bad.error.contains(QLatin1String("thinker")) && bad.error.contains(QLatin1String("caught fire")),
                 qPrintable(bad.error));
    }

    // Tools go as OpenAI's "tools"; streamed tool_calls come back at the reply's end as the
    // <tool_call> text the chat reads; a turn's calls and results go in OpenAI's form.
    void toolsGoAndCallsComeBack() {
        httplib::Server fake;
        std::string lastBody;
        fake.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
            lastBody = req.body;
            res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
                const std::string out =
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Checking.\"}}]}\n\n"
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_r1\","
                    "\"type\":\"function\",\"function\":{\"name\":\"fs__read\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n"
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
                    "\"function\":{\"arguments\":\"th\\\": \\\"a.txt\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
                    "data: [DONE]\n\n";
                sink.write(out.data(), out.size());
                sink.done();
                return true;
            });
        });
        fake.set_keep_alive_max_count(1);
        const int port = fake.bind_to_any_port("127.0.0.1");
        QVERIFY(port > 0);
        std::thread thread([&] { fake.listen_after_bind(); });
        const RemoteProvider provider{QStringLiteral("tooled"), QUrl(QStringLiteral("http://127.0.0.1:%1/v1/").arg(port)), false};
        RemoteClient client;
        const QJsonObject fn{{QStringLiteral("name"), QStringLiteral("fs__read")},
                             {QStringLiteral("parameters"), QJsonObject{{QStringLiteral("type"), QStringLiteral("object")}}}};
        const QJsonArray tools{QJsonObject{{QStringLiteral("type"), QStringLiteral("function")}, {QStringLiteral("function"), fn}}};
        ChatRecord r;
        const quint64 id = client.sendChat(provider, QStringLiteral("m"), {{QStringLiteral("user"), QStringLiteral("read a.txt"), {}}},
                                           Sampling::greedy(32), tools);
        record(client, id, r);
        const bool ended = waitFor([&] { return r.ended; });
        const std::string firstBody = lastBody;
        // The next turn: the call and its result go back in OpenAI's form.
        ChatMessage call{QStringLiteral("assistant"), QStringLiteral("Checking.")};
        call.toolCalls = {ChatToolCall{QStringLiteral("call_r1"), QStringLiteral("fs__read"), QStringLiteral("{\"path\":\"a.txt\"}")}};
        ChatMessage result{QStringLiteral("tool"), QStringLiteral("text of a")};
        result.toolCallId = QStringLiteral("call_r1");
        ChatRecord r2;
        const quint64 id2 = client.sendChat(provider, QStringLiteral("m"),
                                            {{QStringLiteral("user"), QStringLiteral("read a.txt"), {}}, call, result},
                                            Sampling::greedy(32), tools);
        record(client, id2, r2);
        const bool ended2 = waitFor([&] { return r2.ended; });
        fake.stop();
        thread.join();
        QVERIFY(ended && ended2);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        QVERIFY2(firstBody.find("\"tools\":[{\"function\":{\"name\":\"fs__read\"") != std::string::npos, firstBody.c_str());
        QCOMPARE(r.reason, QStringLiteral("tool_calls"));
        const ReplyToolCalls read = readToolCalls(r.text, tools);
        QCOMPARE(read.content, QStringLiteral("Checking."));
        QCOMPARE(read.calls.size(), 1);
        QCOMPARE(read.calls[0].name, QStringLiteral("fs__read"));
        QCOMPARE(read.calls[0].arguments, QStringLiteral("{\"path\":\"a.txt\"}"));
        const QJsonObject second = QJsonDocument::fromJson(QByteArray::fromStdString(lastBody)).object();
        const QJsonArray sent = second.value(QStringLiteral("messages")).toArray();
        QCOMPARE(sent.size(), 3);
        const QJsonObject sentCall = sent.at(1).toObject().value(QStringLiteral("tool_calls")).toArray().at(0).toObject();
        QCOMPARE(sentCall.value(QStringLiteral("id")).toString(), QStringLiteral("call_r1"));
        QCOMPARE(sentCall.value(QStringLiteral("function")).toObject().value(QStringLiteral("arguments")).toString(),
                 QStringLiteral("{\"path\":\"a.txt\"}"));
        QCOMPARE(sent.at(2).toObject().value(QStringLiteral("role")).toString(), QStringLiteral("tool"));
        QCOMPARE(sent.at(2).toObject().value(QStringLiteral("tool_call_id")).toString(), QStringLiteral("call_r1"));
    }

    void keysGoToAnOwnerOnlyFileWithoutKeyring() {
        QTemporaryDir dir;
        ProviderStore store(dir.path());
        store.setSecretTool(QString());
        QCOMPARE(store.keyBackend(), ProviderStore::KeyBackend::File);
        QVERIFY(store.setApiKey(QStringLiteral("box"), QStringLiteral("  sk-123 ")));
        const QString path = store.keyFilePath(QStringLiteral("box"));
        QCOMPARE(path, dir.filePath(QStringLiteral("provider-box.key")));
        QCOMPARE(fileMode(path), 0600);
        ProviderStore again(dir.path());
        again.setSecretTool(QString());
        QCOMPARE(again.apiKey(QStringLiteral("box")), QStringLiteral("sk-123"));
        QVERIFY(again.setApiKey(QStringLiteral("box"), QString()));
        QVERIFY(!QFile::exists(path));
        QVERIFY(!store.setApiKey(QStringLiteral("../escape"), QStringLiteral("x")));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("../provider-../escape.key"))));
    }

    void keysGoToTheKeyringWhenThereIsOne() {
        // A stand-in secret-tool keeping each secret in a file beside it.
        QTemporaryDir dir;
        const QString tool = dir.filePath(QStringLiteral("secret-tool"));
        QFile script(tool);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\ncmd=$1; shift\nfor a; do name=$a; done\n"
                     "f=\"$(dirname \"$0\")/keyring-$name\"\n"
                     "case $cmd in\n store) cat > \"$f\";;\n lookup) [ -f \"$f\" ] && cat \"$f\" || exit 1;;\n"
                     " clear) rm -f \"$f\";;\nesac\n");
        script.close();
        QVERIFY(script.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
        ProviderStore store(dir.path());
        store.setSecretTool(tool);
        QCOMPARE(store.keyBackend(), ProviderStore::KeyBackend::Keyring);
        QVERIFY(store.setApiKey(QStringLiteral("box"), QStringLiteral("sk-ring")));
        QVERIFY(!QFile::exists(store.keyFilePath(QStringLiteral("box"))));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("keyring-box"))));
        ProviderStore again(dir.path());
        again.setSecretTool(tool);
        QCOMPARE(again.apiKey(QStringLiteral("box")), QStringLiteral("sk-ring"));
        // Negative control: without the keyring the key is not found elsewhere.
        ProviderStore fileOnly(dir.path());
        fileOnly.setSecretTool(QString());
        QCOMPARE(fileOnly.apiKey(QStringLiteral("box")), QString());
        // A keyring that refuses: the owner-only file takes the key.
        ProviderStore broken(dir.path());
        broken.setSecretTool(QStringLiteral("/bin/false"));
        QVERIFY(broken.setApiKey(QStringLiteral("other"), QStringLiteral("sk-file")));
        QCOMPARE(fileMode(broken.keyFilePath(QStringLiteral("other"))), 0600);
    }

    void providerListPersists() {
        QTemporaryDir dir;
        {
            ProviderStore store(dir.path());
            QVERIFY(store.providers().isEmpty());
            QVERIFY(store.setProvider({QStringLiteral("gpu-box"), QUrl(QStringLiteral("http://gpu-box:8000/v1")), true}));
            QVERIFY(store.setProvider({QStringLiteral("openai"), QUrl(QStringLiteral("https://api.openai.com/v1")), false}));
            QVERIFY(store.setProvider({QStringLiteral("gpu-box"), QUrl(QStringLiteral("http://gpu-box:9000/v1")), true}));
            QVERIFY(!store.setProvider({QStringLiteral("bad name"), QUrl(QStringLiteral("http://x/v1")), true}));
            QVERIFY(!store.setProvider({QStringLiteral("ftp"), QUrl(QStringLiteral("ftp://x/v1")), true}));
            QVERIFY(!store.lastError().isEmpty());
        }
        ProviderStore store(dir.path());
        QCOMPARE(store.providers().size(), 2);
        QCOMPARE(store.providers().at(0).baseUrl, QUrl(QStringLiteral("http://gpu-box:9000/v1")));
        QCOMPARE(store.providers().at(1).extendedSampling, false);
        QVERIFY(store.removeProvider(QStringLiteral("openai")));
        QCOMPARE(ProviderStore(dir.path()).providers().size(), 1);
        QVERIFY(!store.removeProvider(QStringLiteral("openai")));
    }
};

QTEST_GUILESS_MAIN(TestRemoteProvider)
#include "test_remote_provider.moc"
