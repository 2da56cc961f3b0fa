// Images in the chat page: attaching is refused (with the reason) while the model takes no
// images; with a synthesized Gemma 3 and its projector, files (checked: size, format, count),
// a paste and a drop are attached as thumbnails with a × each, a send carries them to the model
// and into the store and clears them, and the transcript shows them, again after reopening.
// The main window loads a model with the projector the library found beside it, and a
// screenshot of a chat with an image (chat-image.png) is taken.
#include "chat_view.h"
#include "gemma3_vision_files.h"
#include "image_strip.h"
#include "main_window.h"
#include "model_picker.h"
#include "notification_area.h"
#include "services/chat_images.h"
#include "services/engine_host.h"
#include "services/model_library.h"
#include "services/store.h"
#include "store_replies.h"
#include "test_support.h"

#include <QApplication>
#include <QBuffer>
#include <QClipboard>
#include <QComboBox>
#include <QDropEvent>
#include <QImage>
#include <QMimeData>
#include <QPainter>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QToolButton>
#include <QtTest>

using namespace hearth;

namespace {

// A PNG of a small picture: a sky, a sun and a hill, in the given sun colour.
QByteArray picturePng(int width, int height, QColor sun) {
    QImage image(width, height, QImage::Format_RGB888);
    image.fill(QColor(0x87, 0xce, 0xeb));
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(Qt::NoPen);
    p.setBrush(sun);
    p.drawEllipse(QPointF(width * 0.7, height * 0.3), width * 0.12, width * 0.12);
    p.setBrush(QColor(0x3a, 0x9d, 0x23));
    p.drawEllipse(QPointF(width * 0.4, height * 1.1), width * 0.8, height * 0.55);
    p.end();
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return bytes;
}

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(bytes);
    return f.fileName();
}

bool loadInto(app::EngineHost& engine, const QString& path, const QString& projector) {
    QSignalSpy loaded(&engine, &app::EngineHost::loaded);
    app::LoadSettings settings;
    settings.contextLength = 512;
    settings.threads = 2;
    settings.projectorPath = projector;
    engine.loadModel(path, settings);
    return loaded.wait(60000);
}

QString screenshotFolder() {
    const QString shots = qEnvironmentVariableIsSet("HEARTH_SCREENSHOT_DIR")
                              ? qEnvironmentVariable("HEARTH_SCREENSHOT_DIR")
                              : QDir::current().filePath(QStringLiteral("screenshots"));
    QDir().mkpath(shots);
    return shots;
}

} // namespace

class TestChatImages : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model, m_projector;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        const QString error = test::synthGemma3WithProjector(m_dir.path(), m_model, m_projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }

    // No model, or one without a projector: the attach button is off and says why; pasted
    // images are refused with the reason.
    void attachingNeedsAVisionModel() {
        app::EngineHost engine;
        app::Store store;
        app::ImageFileReader reader;
        ui::ChatView chat(&engine, &store);
        chat.setImageReader(&reader);
        auto* attach = chat.findChild<QPushButton*>(QStringLiteral("attachImage"));
        QVERIFY(attach);
        QVERIFY(!attach->isEnabled());
        QVERIFY2(attach->toolTip().contains(QStringLiteral("vision model")),
                 qPrintable(attach->toolTip()));

        QVERIFY(loadInto(engine, QString::fromStdString(m_model), QString()));
        QVERIFY(!chat.canAttachImages());
        QVERIFY(!attach->isEnabled());
        QVERIFY2(attach->toolTip().contains(QStringLiteral("takes no images")),
                 qPrintable(attach->toolTip()));
        QSignalSpy notes(&chat, &ui::ChatView::statusMessage);
        auto* mime = new QMimeData;
        mime->setData(QStringLiteral("image/png"), picturePng(32, 24, Qt::yellow));
        QGuiApplication::clipboard()->setMimeData(mime);
        auto* input = chat.findChild<QPlainTextEdit*>();
        QTest::keySequence(input, QKeySequence::Paste);
        QVERIFY(chat.attachedImages().isEmpty());
        QVERIFY(!notes.isEmpty());
        QVERIFY2(notes.last().first().toString().contains(QStringLiteral("mmproj")),
                 qPrintable(notes.last().first().toString()));

        QVERIFY(
            loadInto(engine, QString::fromStdString(m_model), QString::fromStdString(m_projector)));
        QVERIFY(chat.canAttachImages());
        QVERIFY(attach->isEnabled());
    }

    void attachRemoveSendAndShow() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(
            loadInto(engine, QString::fromStdString(m_model), QString::fromStdString(m_projector)));
        app::ImageFileReader reader;
        ui::ChatView chat(&engine, &store);
        chat.setImageReader(&reader);
        chat.resize(900, 640);
        chat.show();
        chat.setSampling(app::Sampling::greedy(6));
        QSignalSpy notes(&chat, &ui::ChatView::statusMessage);
        auto* strip = chat.findChild<ui::ImageStrip*>();
        QVERIFY(strip);
        QVERIFY(!strip->isVisibleTo(&chat));

        // Files: two pictures attach; a text file and one over the size limit are refused.
        const QByteArray red = picturePng(90, 70, Qt::red), blue = picturePng(64, 48, Qt::blue);
        const QString big = dir.filePath(QStringLiteral("huge.png"));
        {
            QFile f(big);
            QVERIFY(f.open(QIODevice::WriteOnly));
            QVERIFY(f.resize(app::kMaxImageBytes + 1));
        }
        chat.attachFiles({writeFile(dir, QStringLiteral("red.png"), red),
                          writeFile(dir, QStringLiteral("notes.txt"), "hello"), big,
                          writeFile(dir, QStringLiteral("blue.png"), blue)});
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedImages().size(), 2, 5000);
        QCOMPARE(chat.attachedImages(), (QList<QByteArray>{red, blue}));
        QTRY_VERIFY_WITH_TIMEOUT(!notes.isEmpty(), 2000);
        const QString said = notes.last().first().toString();
        QVERIFY2(said.contains(QStringLiteral("notes.txt is not a PNG")), qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("huge.png is too large")), qPrintable(said));
        QVERIFY(strip->isVisibleTo(&chat));

        // The × of the first removes it.
        QTRY_COMPARE_WITH_TIMEOUT(
            strip->findChildren<QToolButton*>(QStringLiteral("removeImage")).size(), 2, 2000);
        QTest::mouseClick(strip->findChildren<QToolButton*>(QStringLiteral("removeImage")).first(),
                          Qt::LeftButton);
        QCOMPARE(chat.attachedImages(), QList<QByteArray>{blue});

        // A paste of image data and a drop of an image file onto the input.
        auto* mime = new QMimeData;
        mime->setData(QStringLiteral("image/png"), red);
        QGuiApplication::clipboard()->setMimeData(mime);
        auto* input = chat.findChild<QPlainTextEdit*>();
        QTest::keySequence(input, QKeySequence::Paste);
        QCOMPARE(chat.attachedImages(), (QList<QByteArray>{blue, red}));
        QMimeData dropped;
        dropped.setUrls({QUrl::fromLocalFile(dir.filePath(QStringLiteral("blue.png")))});
        QDragEnterEvent enter(QPoint(20, 10), Qt::CopyAction, &dropped, Qt::LeftButton,
                              Qt::NoModifier);
        QApplication::sendEvent(input->viewport(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(20, 10), Qt::CopyAction, &dropped, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(input->viewport(), &drop);
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedImages().size(), 3, 5000);
        // Onto the transcript too (the chat page takes it).
        auto* transcript = chat.findChild<QTextBrowser*>()->viewport();
        QDragEnterEvent enterTranscript(QPoint(40, 40), Qt::CopyAction, &dropped, Qt::LeftButton,
                                        Qt::NoModifier);
        QApplication::sendEvent(transcript, &enterTranscript);
        QVERIFY(enterTranscript.isAccepted());
        QDropEvent dropTranscript(QPointF(40, 40), Qt::CopyAction, &dropped, Qt::LeftButton,
                                  Qt::NoModifier);
        QApplication::sendEvent(transcript, &dropTranscript);
        QTRY_COMPARE_WITH_TIMEOUT(chat.attachedImages().size(), 4, 5000);
        chat.removeAttachment(3);
        chat.removeAttachment(2);

        // Send: the images go with the message, into the store, and leave the input.
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        chat.sendText(QStringLiteral("What is in these pictures?"));
        QVERIFY(chat.attachedImages().isEmpty());
        QVERIFY(!strip->isVisibleTo(&chat));
        QVERIFY(replies.wait(60000));
        QCOMPARE(chat.messageImages(0), (QList<QByteArray>{blue, red}));
        QVERIFY(chat.messageImages(1).isEmpty());
        const QString md = chat.transcriptMarkdown();
        QCOMPARE(md.count(QStringLiteral("](hearth-image:")), 2);
        QVERIFY(md.indexOf(QStringLiteral("![image 2]")) <
                md.indexOf(QStringLiteral("What is in these pictures?")));
        auto* browser = chat.findChild<QTextBrowser*>();
        const int at = md.indexOf(QStringLiteral("hearth-image:"));
        const QString name = md.mid(at, md.indexOf(QLatin1Char(')'), at) - at);
        const QImage thumb =
            browser->document()->resource(QTextDocument::ImageResource, QUrl(name)).value<QImage>();
        QVERIFY(!thumb.isNull());
        QCOMPARE(thumb.size(), QSize(64, 48)); // small ones keep their size
        const qint64 conv = chat.conversationId();
        const auto stored = test::storedMessages(store, conv);
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[0].images, (QList<QByteArray>{blue, red}));

        // Reopened: shown again; a reply that saw them was written.
        chat.newChat();
        QVERIFY(!chat.transcriptMarkdown().contains(QStringLiteral("hearth-image:")));
        chat.openConversation(conv);
        QTRY_COMPARE_WITH_TIMEOUT(chat.messageCount(), 2, 5000);
        QCOMPARE(chat.messageImages(0), (QList<QByteArray>{blue, red}));
        QCOMPARE(chat.transcriptMarkdown().count(QStringLiteral("](hearth-image:")), 2);

        // Edit and resend keeps the message's images unless removed.
        chat.editMessage(0);
        QCOMPARE(chat.attachedImages(), (QList<QByteArray>{blue, red}));
        chat.cancelEdit();
        QVERIFY(chat.attachedImages().isEmpty());
    }

    // Images attached while a text-only model is loaded stay, with the reason, until one that
    // takes them is loaded.
    void sendingToAModelWithoutImagesIsRefused() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        QVERIFY(
            loadInto(engine, QString::fromStdString(m_model), QString::fromStdString(m_projector)));
        app::ImageFileReader reader;
        ui::ChatView chat(&engine, &store);
        chat.setImageReader(&reader);
        chat.attachImages({picturePng(20, 20, Qt::red)});
        QCOMPARE(chat.attachedImages().size(), 1);
        QVERIFY(loadInto(engine, QString::fromStdString(m_model), QString()));
        QSignalSpy notes(&chat, &ui::ChatView::statusMessage);
        chat.sendText(QStringLiteral("And now?"));
        QVERIFY(!notes.isEmpty());
        QVERIFY(notes.last().first().toString().contains(QStringLiteral("takes no images")));
        QCOMPARE(chat.attachedImages().size(), 1);
        QCOMPARE(chat.messageCount(), 0);
        QVERIFY(!chat.isGenerating());
    }

    // Unloaded while idle: images alone can be attached and sent; the send loads the model
    // again and goes once it is back.
    void imagesAloneAreSentAfterAnIdleReload() {
        QTemporaryDir dir;
        app::Store store;
        store.open(dir.filePath(QStringLiteral("hearth.db")));
        app::EngineHost engine;
        app::ImageFileReader reader;
        ui::ChatView chat(&engine, &store);
        chat.setImageReader(&reader);
        chat.setSampling(app::Sampling::greedy(4));
        const QString model = QString::fromStdString(m_model);
        chat.setModelToReload(model);
        QVERIFY(chat.canAttachImages());
        const QByteArray picture = picturePng(40, 30, Qt::red);
        chat.attachImages({picture});
        QSignalSpy reload(&chat, &ui::ChatView::reloadRequested);
        QSignalSpy replies(&chat, &ui::ChatView::replyFinished);
        chat.sendText(QString());
        QCOMPARE(reload.size(), 1);
        QVERIFY(loadInto(engine, model, QString::fromStdString(m_projector)));
        QVERIFY(replies.wait(30000));
        QCOMPARE(chat.messageImages(0), QList<QByteArray>{picture});
        QVERIFY(chat.attachedImages().isEmpty());
    }

    // The main window: the library pairs the model with its projector, a load takes it, and a
    // chat with an image (one sent, one attached) is on screen.
    void windowShowsAChatWithAnImage() {
        QTemporaryDir data, models;
        QVERIFY(QFile::copy(QString::fromStdString(m_model),
                            models.filePath(QStringLiteral("gemma3-vision.gguf"))));
        QVERIFY(QFile::copy(QString::fromStdString(m_projector),
                            models.filePath(QStringLiteral("mmproj-gemma3-f32.gguf"))));
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        ui::MainWindow window(data.path());
        window.resize(1280, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const QString path = models.filePath(QStringLiteral("gemma3-vision.gguf"));
        QTRY_VERIFY_WITH_TIMEOUT(
            window.library()->find(path) && window.library()->find(path)->isVision(), 10000);
        QCOMPARE(window.library()->models().size(), 1); // the projector is no model
        window.loadModel(path);
        QTRY_VERIFY_WITH_TIMEOUT(window.engine()->isLoaded(), 30000);
        QVERIFY(window.engine()->model().vision);
        // The picker marks the model as one that takes images.
        auto* picker = window.findChild<ui::ModelPicker*>();
        QVERIFY(picker);
        QVERIFY2(picker->findChild<QComboBox*>()->currentText().contains(QStringLiteral("Vision")),
                 qPrintable(picker->findChild<QComboBox*>()->currentText()));
        ui::ChatView* chat = window.chatView();
        chat->setSampling(app::Sampling::greedy(12));
        chat->attachImages({picturePng(320, 220, QColor(0xff, 0xc8, 0x00))});
        QSignalSpy replies(chat, &ui::ChatView::replyFinished);
        chat->sendText(QStringLiteral("What is in this picture?"));
        QVERIFY(replies.wait(60000));
        chat->attachImages(
            {picturePng(200, 150, QColor(0xff, 0x60, 0x30)), picturePng(120, 90, Qt::white)});
        chat->findChild<QPlainTextEdit*>()->setPlainText(QStringLiteral("And these two?"));
        window.dismissWelcome();
        window.notifications()->dismissAll();
        window.pages()->setCurrentWidget(chat);
        QTest::qWait(200);
        QVERIFY(window.grab().save(
            QDir(screenshotFolder()).filePath(QStringLiteral("chat-image.png"))));
        qunsetenv("HEARTH_MODELS_DIR");
    }
};

QTEST_MAIN(TestChatImages)
#include "test_chat_images.moc"
