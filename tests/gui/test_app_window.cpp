// The real main window end to end (run under Xvfb when available): loads stories260K, sends a
// chat message, shows the streamed reply, stores the conversation, and saves screenshots of the
// chat, models, settings and server pages. A GUI-thread timer checks that nothing blocks the GUI
// thread while the model loads and generates, and prints the longest gap it saw.
#include "chat_view.h"
#include "main_window.h"
#include "model_info_view.h"
#include "model_picker.h"
#include "notification_area.h"
#include "providers_dialog.h"
#include "quantize_dialog.h"
#include "models_view.h"
#include "server_view.h"
#include "settings_view.h"
#include "test_support.h"

#include "../app/test_hub.h"

#include "services/engine_host.h"
#include "services/model_library.h"
#include "services/store.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStatusBar>
#include <QTabBar>
#include <QUrl>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using hearth::ui::MainWindow;

class TestAppWindow : public QObject {
    Q_OBJECT

    QString screenshotDir() const {
        const QString dir = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                                ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                                : QDir::current().filePath(QStringLiteral("screenshots"));
        QDir().mkpath(dir);
        return dir;
    }

private Q_SLOTS:
    void chatEndToEnd() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir data, models;
        QVERIFY(data.isValid() && models.isValid());
        const QString model = models.filePath(QStringLiteral("stories260K.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")), model));
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());

        MainWindow window(data.path());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));

        // The GUI thread's heartbeat: the longest gap between 10 ms ticks.
        QElapsedTimer clock;
        qint64 last = 0, worstGap = 0;
        QTimer heartbeat;
        heartbeat.setInterval(10);
        connect(&heartbeat, &QTimer::timeout, this, [&] {
            const qint64 now = clock.elapsed();
            worstGap = std::max(worstGap, now - last);
            last = now;
        });
        clock.start();
        heartbeat.start();

        window.loadModel(model);
        QTRY_VERIFY_WITH_TIMEOUT(window.engine()->isLoaded(), 30000);
        hearth::app::Sampling greedy = hearth::app::Sampling::greedy(48);
        window.chatView()->setSampling(greedy);
        QSignalSpy replies(window.chatView(), &hearth::ui::ChatView::replyFinished);
        window.chatView()->sendText(QStringLiteral("Once upon a time"));
        QVERIFY(replies.wait(60000));
        const QString reply = replies.takeFirst().at(0).toString();
        QVERIFY2(!reply.trimmed().isEmpty(), qPrintable(reply));
        QVERIFY(window.chatView()->transcriptMarkdown().contains(QStringLiteral("Once upon a time")));
        QVERIFY(window.chatView()->transcriptMarkdown().contains(reply.trimmed().left(20)));
        // What is on screen, not only the Markdown behind it: the question and the answer.
        const QTextBrowser* shown = window.chatView()->findChild<QTextBrowser*>();
        QVERIFY(shown);
        QVERIFY2(shown->toPlainText().contains(QStringLiteral("Once upon a time")), qPrintable(shown->toPlainText()));
        QVERIFY2(shown->toPlainText().contains(reply.trimmed().section(QLatin1Char('\n'), 0, 0).left(20)), qPrintable(shown->toPlainText()));
        heartbeat.stop();
        qInfo("longest GUI-thread gap during load and generation: %lld ms", worstGap);
        // A hang guard, not a speed figure: nothing blocks the GUI thread for a second.
        QVERIFY2(worstGap < 1000, qPrintable(QString::number(worstGap)));

        // The conversation is in the database: user message and reply.
        QSignalSpy loaded(window.store(), &hearth::app::Store::messagesLoaded);
        window.store()->messages(window.chatView()->conversationId());
        QVERIFY(loaded.wait(10000));
        const auto messages = loaded.takeFirst().at(2).value<QList<hearth::app::StoredMessage>>();
        QCOMPARE(messages.size(), 2);
        QCOMPARE(messages[0].content, QStringLiteral("Once upon a time"));
        QCOMPARE(messages[1].content, reply);

        // The server page serves the loaded model (on a port free right now).
        {
            QTcpServer probe;
            QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
            window.serverView()->setPort(probe.serverPort());
        }
        QVERIFY(window.serverView()->start());
        QVERIFY(window.serverView()->port() > 0);
        // A request shows up in the panel's log.
        {
            httplib::Client client("127.0.0.1", window.serverView()->port());
            auto res = client.Get("/v1/models");
            QVERIFY(res && res->status == 200);
        }
        QTRY_VERIFY_WITH_TIMEOUT(window.serverView()->logText().contains(QStringLiteral("GET /v1/models 200")), 5000);

        // The hub browser against a stand-in hub on loopback: search, then a repository's
        // files grouped by quantization with fit badges.
        hearth::test::TestHub hub;
        hub.setArchitecture("acme/tiny-GGUF", "llama");
        for (const char* quant : {"Q4_K_M", "Q5_K_M", "Q8_0", "IQ1_S"})
            hub.addFile("acme/tiny-GGUF", std::string("tiny-") + quant + ".gguf",
                        {hearth::test::TestHub::makeContent(4096), {}, {}});
        hub.addFile("acme/tiny-GGUF", "tiny-F16-00001-of-00002.gguf", {hearth::test::TestHub::makeContent(3000), {}, {}});
        hub.addFile("acme/tiny-GGUF", "tiny-F16-00002-of-00002.gguf", {hearth::test::TestHub::makeContent(3000, 2), {}, {}});
        window.hub()->setBaseUrl(hub.baseUrl());
        window.modelsView()->search(QStringLiteral("tiny"));
        QTRY_VERIFY_WITH_TIMEOUT(!hub.requests().empty(), 5000);
        window.modelsView()->showRepo(QStringLiteral("acme/tiny-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(window.modelsView()->shownOptionCount(), 5, 5000);

        const QString dir = screenshotDir();
        QTabWidget* pages = window.pages();
        auto shoot = [&](const char* name, QWidget* what = nullptr) {
            QTest::qWait(100);
            const QString path = QDir(dir).filePath(QStringLiteral("%1.png").arg(QLatin1String(name)));
            return (what ? what : static_cast<QWidget*>(&window))->grab().save(path);
        };
        window.dismissWelcome();
        window.notifications()->dismissAll();
        pages->setCurrentWidget(window.chatView());
        QVERIFY(shoot("chat"));
        pages->setCurrentWidget(window.modelsView());
        window.modelsView()->showLibraryTab();
        QVERIFY(shoot("models"));
        window.modelsView()->showDiscoverTab();
        QVERIFY(shoot("hub"));
        pages->setCurrentWidget(window.settingsView());
        QVERIFY(shoot("settings"));
        pages->setCurrentWidget(window.serverView());
        QVERIFY(shoot("server"));
        {
            QSignalSpy inspected(window.findChild<hearth::ui::ModelInfoView*>(), &hearth::ui::ModelInfoView::loaded);
            window.inspectModel(model);
            QVERIFY(inspected.wait(10000));
            QVERIFY(shoot("inspect"));
        }
        {
            hearth::ui::QuantizeDialog quantize(window.library(), model, &window);
            quantize.show();
            QVERIFY(QTest::qWaitForWindowExposed(&quantize));
            QVERIFY(shoot("quantize", &quantize));
        }
        {
            hearth::ui::ProvidersDialog providers(window.providerStore(), window.remoteClient(), &window);
            providers.show();
            QVERIFY(QTest::qWaitForWindowExposed(&providers));
            QVERIFY(shoot("providers", &providers));
        }
        QVERIFY(window.settingsView()->estimateText().contains(QStringLiteral("KV cache")));
        window.serverView()->stop();
        qInfo("screenshots in %s", qPrintable(dir));
    }

    // Dropping files on the window adds the .gguf ones to the library where they are.
    void dropAddsModelsToTheLibrary() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir data, models, elsewhere;
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        const QString gguf = elsewhere.filePath(QStringLiteral("dropped.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")), gguf));
        const QString text = elsewhere.filePath(QStringLiteral("notes.txt"));
        QFile f(text);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a model");
        f.close();

        MainWindow window(data.path());
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto* mime = new QMimeData();
        mime->setUrls({QUrl::fromLocalFile(text), QUrl(QStringLiteral("https://example.com/x.gguf")),
                       QUrl::fromLocalFile(gguf)});
        QCOMPARE(MainWindow::droppedModels(mime->urls()), QStringList({gguf}));
        const QPoint at(window.width() / 2, window.height() / 2);
        QDragEnterEvent enter(at, Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(at), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QVERIFY(drop.isAccepted());
        auto inLibrary = [&] {
            for (const auto& m : window.library()->models())
                if (QFileInfo(m.path).canonicalFilePath() == QFileInfo(gguf).canonicalFilePath()) return true;
            return false;
        };
        QTRY_VERIFY_WITH_TIMEOUT(inLibrary(), 10000);
        QCOMPARE(window.pages()->currentWidget(), static_cast<QWidget*>(window.modelsView()));
        // Only text: refused.
        auto* textOnly = new QMimeData();
        textOnly->setUrls({QUrl::fromLocalFile(text)});
        QDragEnterEvent refused(at, Qt::CopyAction, textOnly, Qt::LeftButton, Qt::NoModifier);
        refused.ignore();
        QApplication::sendEvent(&window, &refused);
        QVERIFY(!refused.isAccepted());
        delete mime;
        delete textOnly;
    }

    // Lines that say work is under way ("Listing …", "Editing a message …") leave the status bar
    // as soon as the work ends, not seconds later.
    void progressLinesAreWithdrawn() {
        QTemporaryDir data, models;
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        hearth::test::TestHub hub;
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {hearth::test::TestHub::makeContent(4096), {}, {}});
        MainWindow window(data.path());
        window.dismissWelcome();
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.hub()->setBaseUrl(hub.baseUrl());
        window.modelsView()->showRepo(QStringLiteral("acme/tiny-GGUF"));
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Listing")),
                 qPrintable(window.statusBar()->currentMessage()));
        QTRY_COMPARE_WITH_TIMEOUT(window.modelsView()->shownOptionCount(), 1, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(window.statusBar()->currentMessage(), QString(), 1000);

        // Editing a message: the line goes when the edit is cancelled.
        QSignalSpy created(window.store(), &hearth::app::Store::conversationCreated);
        hearth::app::Conversation draft;
        draft.title = QStringLiteral("Edit me");
        draft.samplingJson = QStringLiteral("{}");
        window.store()->createConversation(draft);
        QVERIFY(created.wait(5000));
        hearth::app::StoredMessage m;
        m.conversationId = created.first().at(1).value<hearth::app::Conversation>().id;
        m.role = QStringLiteral("user");
        m.content = QStringLiteral("Hello");
        QSignalSpy committed(window.store(), &hearth::app::Store::committed);
        window.store()->appendMessage(m);
        QVERIFY(committed.wait(5000));
        window.chatView()->openConversation(m.conversationId);
        QTRY_COMPARE_WITH_TIMEOUT(window.chatView()->messageCount(), 1, 5000);
        window.chatView()->editMessage(0);
        QVERIFY(window.chatView()->isEditing());
        QVERIFY2(window.statusBar()->currentMessage().startsWith(QStringLiteral("Editing")),
                 qPrintable(window.statusBar()->currentMessage()));
        window.chatView()->cancelEdit();
        QCOMPARE(window.statusBar()->currentMessage(), QString());
        // A line that is not the one withdrawn stays.
        window.chatView()->editMessage(0);
        Q_EMIT window.modelsView()->statusMessage(QStringLiteral("Downloaded and verified x.gguf"), hearth::ui::StatusLevel::Info);
        window.chatView()->cancelEdit();
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Downloaded and verified x.gguf"));
        // The level the view gives decides, not the words: a failure worded without "error" or
        // "failed" is a notification, and a routine line that mentions an error is not.
        window.notifications()->dismissAll();
        const int shown = int(window.notifications()->shown().size());
        Q_EMIT window.modelsView()->statusMessage(QStringLiteral("Hub: the connection timed out"), hearth::ui::StatusLevel::Error);
        QCOMPARE(int(window.notifications()->shown().size()), shown + 1);
        Q_EMIT window.chatView()->statusMessage(QStringLiteral("Error codes copied"), hearth::ui::StatusLevel::Info);
        QCOMPARE(int(window.notifications()->shown().size()), shown + 1);
        QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Error codes copied"));
        window.notifications()->dismissAll();
    }

    // The model last loaded is loaded again when the app starts again (the same data folder).
    void lastModelIsRestored() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir data, models;
        const QString model = models.filePath(QStringLiteral("stories260K.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")), model));
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        {
            MainWindow window(data.path());
            window.dismissWelcome();
            window.loadModel(model);
            QTRY_VERIFY_WITH_TIMEOUT(window.engine()->isLoaded(), 30000);
        }
        MainWindow again(data.path());
        QVERIFY(!again.isWelcomeShown());
        QTRY_VERIFY_WITH_TIMEOUT(again.engine()->isLoaded(), 30000);
        QCOMPARE(QFileInfo(again.engine()->model().path).canonicalFilePath(), QFileInfo(model).canonicalFilePath());
        QTRY_COMPARE_WITH_TIMEOUT(QFileInfo(again.modelPicker()->currentChoice()).canonicalFilePath(),
                                  QFileInfo(model).canonicalFilePath(), 5000);
    }

    // Notifications float over the page: showing them moves no control, so a click aimed at one
    // still lands on it.
    void notificationsMoveNoControl() {
        QTemporaryDir data, models;
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        MainWindow window(data.path());
        window.dismissWelcome();
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QPushButton* newChat = nullptr;
        for (QPushButton* b : window.chatView()->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("New chat")) newChat = b;
        auto* tabs = window.pages()->findChild<QTabBar*>(QString(), Qt::FindDirectChildrenOnly);
        auto* input = window.chatView()->findChild<QPlainTextEdit*>();
        QVERIFY(newChat && tabs && input);
        const QList<QWidget*> controls = {newChat, tabs, input, window.pages()};
        auto geometry = [&] {
            QList<QRect> out;
            for (QWidget* w : controls) out << QRect(w->mapTo(&window, QPoint(0, 0)), w->size());
            return out;
        };
        QTest::qWait(50);
        const QList<QRect> before = geometry();
        window.notifyWarning(QStringLiteral("Something to read before going on"));
        window.notifyError(QStringLiteral("And something that went wrong"));
        QTest::qWait(100);
        QVERIFY(window.notifications()->isVisible());
        QCOMPARE(window.notifications()->shown().size(), 2);
        QCOMPARE(geometry(), before);
        // Shown within the window, above the pages.
        const QRect notes(window.notifications()->mapTo(&window, QPoint(0, 0)), window.notifications()->size());
        QVERIFY2(window.rect().contains(notes), qPrintable(QStringLiteral("%1,%2 %3x%4").arg(notes.x()).arg(notes.y())
                                                               .arg(notes.width()).arg(notes.height())));
        QVERIFY(notes.height() > 0);
        // On the chat page it sits below the model picker, which stays clear to click.
        const QRect picker(window.modelPicker()->mapTo(&window, QPoint(0, 0)), window.modelPicker()->size());
        QVERIFY2(!notes.intersects(picker), qPrintable(QStringLiteral("notes at y %1, picker at y %2-%3")
                                                            .arg(notes.y()).arg(picker.y()).arg(picker.bottom())));
        window.notifications()->dismissAll();
        QTest::qWait(100);
        QCOMPARE(geometry(), before);
    }
};

QTEST_MAIN(TestAppWindow)
#include "test_app_window.moc"
