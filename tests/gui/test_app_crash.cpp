// A reply survives the app's sudden death: the test runs itself again as a child app (a real
// MainWindow and Store in a data folder) whose chat streams from a slow OpenAI-compatible server
// on loopback, kills it with SIGKILL mid-reply, then finds the partial reply stored and marked
// incomplete, and the restarted app shows it so.
#include "chat_view.h"
#include "main_window.h"

#include "services/engine_host.h"
#include "services/remote_provider.h"
#include "services/store.h"

#include <httplib.h>

#include <QApplication>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

using hearth::ui::MainWindow;

namespace {

// A server that streams " word" pieces every 20 ms until the client leaves (or 5000 pieces).
class SlowServer {
public:
    SlowServer() {
        m_server.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("{\"object\":\"list\",\"data\":[{\"id\":\"slow-model\",\"object\":\"model\"}]}",
                            "application/json");
        });
        m_server.Post("/v1/chat/completions", [this](const httplib::Request&, httplib::Response& res) {
            res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& sink) {
                for (int i = 0; i < 5000; ++i) {
                    const std::string piece =
                        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word" + std::to_string(i) + "\"}}]}\n\n";
                    if (!sink.write(piece.data(), piece.size())) return false;
                    ++m_sent;
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                }
                sink.done();
                return true;
            });
        });
        m_port = m_server.bind_to_any_port("127.0.0.1");
        m_thread = std::thread([this] { m_server.listen_after_bind(); });
        while (!m_server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ~SlowServer() {
        m_server.stop();
        m_thread.join();
    }
    int port() const { return m_port; }
    int sent() const { return m_sent; }

private:
    httplib::Server m_server;
    std::thread m_thread;
    int m_port = 0;
    std::atomic<int> m_sent{0};
};

// The child: the app on `dataDir`, chatting with the slow server's model, until killed.
int runChild(const QString& dataDir, int port) {
    qputenv("HEARTH_NO_KEYRING", "1");
    MainWindow window(dataDir);
    window.dismissWelcome();
    window.show();
    hearth::app::RemoteProvider slow;
    slow.name = QStringLiteral("slow");
    slow.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:%1/v1").arg(port));
    window.providerStore()->setProvider(slow);
    window.useRemoteModel(QStringLiteral("slow"), QStringLiteral("slow-model"));
    QTimer::singleShot(200, &window, [&window] { window.chatView()->sendText(QStringLiteral("Tell me a long story")); });
    return QApplication::exec();
}

QList<hearth::app::StoredMessage> storedMessages(const QString& dataDir) {
    hearth::app::Store store;
    QSignalSpy opened(&store, &hearth::app::Store::opened);
    store.open(QDir(dataDir).filePath(QStringLiteral("conversations.sqlite")));
    QSignalSpy listed(&store, &hearth::app::Store::conversationsListed);
    store.listConversations();
    if (!listed.wait(10000)) return {};
    const auto conversations = listed.first().at(1).value<QList<hearth::app::Conversation>>();
    if (conversations.size() != 1) return {};
    QSignalSpy loaded(&store, &hearth::app::Store::messagesLoaded);
    store.messages(conversations.first().id);
    if (!loaded.wait(10000)) return {};
    return loaded.first().at(2).value<QList<hearth::app::StoredMessage>>();
}

} // namespace

class TestAppCrash : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void killedMidReplyKeepsThePartialReply() {
        SlowServer server;
        QTemporaryDir data;
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        QStringList command = hearth::test::selfCommand();
        child.start(command.takeFirst(), command << QStringLiteral("--child") << data.path() << QString::number(server.port()));
        QVERIFY(child.waitForStarted(10000));
        // Streaming for about two seconds: the reply row exists from its first piece and is
        // rewritten at least once a second.
        QTRY_VERIFY_WITH_TIMEOUT(server.sent() >= 100, 30000);
        QCOMPARE(child.state(), QProcess::Running);
        child.kill(); // SIGKILL: no destructor, no last write
        QVERIFY(child.waitForFinished(10000));
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);
        const int sentAtKill = server.sent();

        const QList<hearth::app::StoredMessage> messages = storedMessages(data.path());
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].content, QStringLiteral("Tell me a long story"));
        QCOMPARE(messages[1].role, QStringLiteral("assistant"));
        QCOMPARE(messages[1].state, QStringLiteral("incomplete"));
        QVERIFY2(messages[1].content.startsWith(QStringLiteral(" word0 word1")), qPrintable(messages[1].content.left(80)));
        // At most about a second of the reply is lost.
        const int kept = int(messages[1].content.count(QStringLiteral(" word")));
        qInfo("pieces sent before the kill: %d; stored: %d", sentAtKill, kept);
        QVERIFY(kept >= 20);

        // The app started again shows it, marked incomplete, with Regenerate offered.
        MainWindow again(data.path());
        again.dismissWelcome();
        again.show();
        QTRY_VERIFY_WITH_TIMEOUT(again.chatView()->conversationId() == 0, 1000);
        QSignalSpy listed(again.store(), &hearth::app::Store::conversationsListed);
        again.chatView()->reloadConversations();
        QVERIFY(listed.wait(10000));
        const auto conversations = listed.last().at(1).value<QList<hearth::app::Conversation>>();
        QCOMPARE(conversations.size(), 1);
        again.chatView()->openConversation(conversations.first().id);
        QTRY_VERIFY_WITH_TIMEOUT(again.chatView()->transcriptMarkdown().contains(QStringLiteral("incomplete")), 10000);
        QVERIFY(again.chatView()->transcriptMarkdown().contains(QStringLiteral("word0 word1")));
        QVERIFY(again.chatView()->canRegenerate());
    }
};

namespace {

int testMain(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "--child") == 0) {
        QApplication app(argc, argv);
        return runChild(QString::fromLocal8Bit(argv[2]), std::atoi(argv[3]));
    }
    QApplication app(argc, argv);
    TestAppCrash test;
    return QTest::qExec(&test, argc, argv);
}

} // namespace

HEARTH_TEST_ENTRY(testMain)

#include "test_app_crash.moc"
