// EngineHost with images: a synthesized Gemma 3 loaded with its projector (LoadSettings::
// projectorPath) answers a chat whose user message carries a PNG exactly as hearth-cli run
// --mmproj --image does; the same model without its projector, a text-only model and a broken
// image fail with messages that say why, and nothing crashes.
#include "gemma3_vision_files.h"
#include "hearth/engine.h"
#include "services/engine_host.h"
#include "test_support.h"

#include <QBuffer>
#include <QImage>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;

namespace {

// A PNG of a width x height picture of gradients.
QByteArray imageTestPng(int width, int height) {
    QImage q(width, height, QImage::Format_RGB888);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            q.setPixelColor(x, y, QColor((3 * x) % 256, (5 * y) % 256, (x ^ y) % 256));
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    q.save(&buffer, "PNG");
    return bytes;
}

LoadSettings imageTestSettings(const QString& projector) {
    LoadSettings s;
    s.contextLength = 512;
    s.threads = 2;
    s.projectorPath = projector;
    return s;
}

bool loadForImages(EngineHost& host, const QString& path, const LoadSettings& settings) {
    QSignalSpy loaded(&host, &EngineHost::loaded);
    QSignalSpy failed(&host, &EngineHost::loadFailed);
    host.loadModel(path, settings);
    for (int i = 0; i < 600 && loaded.isEmpty() && failed.isEmpty(); ++i) loaded.wait(100);
    if (!failed.isEmpty()) qWarning() << "load failed:" << failed.first().first().toString();
    return loaded.count() == 1;
}

struct ImageChatOutcome {
    QString text;
    QString error;
    bool done = false;
};

ImageChatOutcome chatForImages(EngineHost& host, const QList<ChatMessage>& messages,
                               int maxTokens) {
    ImageChatOutcome out;
    quint64 id = 0;
    QObject guard;
    QObject::connect(&host, &EngineHost::tokenReceived, &guard,
                     [&](quint64 rid, const QString& piece) {
                         if (rid == id) out.text += piece;
                     });
    QObject::connect(&host, &EngineHost::finished, &guard,
                     [&](quint64 rid, const QString&, const GenerationUsage&) {
                         if (rid == id) out.done = true;
                     });
    QObject::connect(&host, &EngineHost::failed, &guard, [&](quint64 rid, const QString& message) {
        if (rid == id) {
            out.error = message;
            out.done = true;
        }
    });
    id = host.sendChat(messages, Sampling::greedy(maxTokens));
    for (int i = 0; i < 600 && !out.done; ++i) QTest::qWait(50);
    return out;
}

} // namespace

class TestEngineHostImages : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model, m_projector;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        const QString error =
            hearth::test::synthGemma3WithProjector(m_dir.path(), m_model, m_projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }

    void aChatWithAnImageAnswersAsHearthCliRunDoes() {
        EngineHost host;
        QVERIFY(loadForImages(host, QString::fromStdString(m_model),
                              imageTestSettings(QString::fromStdString(m_projector))));
        QVERIFY(host.model().vision);
        QVERIFY(host.model().visionNote.isEmpty());
        const QByteArray picture = imageTestPng(90, 70);
        ChatMessage user{
            QStringLiteral("user"), QStringLiteral("What is it?"), QString(), {picture}};
        const ImageChatOutcome answer = chatForImages(host, {user}, 6);
        QVERIFY(answer.done);
        QVERIFY2(answer.error.isEmpty(), qPrintable(answer.error));

        // The same turn through hearth-cli run --chat: the image's marker before the text.
        const QString file = m_dir.filePath(QStringLiteral("picture.png"));
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(picture);
        }
        QProcess run;
        run.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                  {QStringLiteral("run"), QString::fromStdString(m_model),
                   QStringLiteral("--mmproj"), QString::fromStdString(m_projector),
                   QStringLiteral("--image"), file, QStringLiteral("--chat"), QStringLiteral("-p"),
                   QStringLiteral("<__media__>\nWhat is it?"), QStringLiteral("--temp"),
                   QStringLiteral("0"), QStringLiteral("-n"), QStringLiteral("6"),
                   QStringLiteral("--print-ids"), QStringLiteral("--threads"),
                   QStringLiteral("2")});
        QVERIFY(run.waitForFinished(120000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(2000).constData());
        std::vector<int32_t> ids;
        for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n'))
            if (line.startsWith(QStringLiteral("generated ids: ")))
                for (const QString& id : line.mid(15).split(' ', Qt::SkipEmptyParts))
                    ids.push_back(id.toInt());
        QCOMPARE(ids.size(), size_t(6));
        hearth::EngineConfig ec;
        ec.modelPath = m_model;
        auto engine = hearth::Engine::create(ec);
        QVERIFY(engine.isOk());
        auto text = (*engine)->tokenizer().decode(ids);
        QVERIFY(text.isOk());
        QCOMPARE(answer.text, QString::fromStdString(*text));

        // Without the image the answer is another (the image reached the model).
        const ImageChatOutcome blind = chatForImages(
            host, {ChatMessage{QStringLiteral("user"), QStringLiteral("What is it?")}}, 6);
        QVERIFY2(blind.error.isEmpty(), qPrintable(blind.error));
        QVERIFY(blind.text != answer.text);

        // A broken image fails the request and names it; the host goes on.
        ChatMessage broken{QStringLiteral("user"),
                           QStringLiteral("And this?"),
                           QString(),
                           {picture, QByteArray("not a picture at all")}};
        const ImageChatOutcome bad = chatForImages(host, {broken}, 4);
        QVERIFY(bad.done);
        QVERIFY2(bad.error.contains(QStringLiteral("image 2")), qPrintable(bad.error));
        QVERIFY(chatForImages(host, {user}, 2).error.isEmpty());
    }

    // The model loaded without its projector, or a model that takes no images: a clear refusal.
    void imagesWithoutAProjectorAreRefused() {
        EngineHost host;
        QVERIFY(loadForImages(host, QString::fromStdString(m_model), imageTestSettings(QString())));
        QVERIFY(!host.model().vision);
        ChatMessage user{QStringLiteral("user"),
                         QStringLiteral("What is it?"),
                         QString(),
                         {imageTestPng(16, 16)}};
        const ImageChatOutcome out = chatForImages(host, {user}, 4);
        QVERIFY(out.done);
        QVERIFY2(out.error.contains(QStringLiteral("no vision projector")), qPrintable(out.error));
        QVERIFY(out.error.contains(QStringLiteral("mmproj")));

        QTemporaryDir dir;
        std::string textOnly;
        const QString synth = hearth::test::synthTextOnlyModel(dir.path(), textOnly); // qwen3-tiny
        QVERIFY2(synth.isEmpty(), qPrintable(synth));
        QVERIFY(loadForImages(host, QString::fromStdString(textOnly), imageTestSettings(QString())));
        const ImageChatOutcome text = chatForImages(host, {user}, 4);
        QVERIFY2(text.error.contains(QStringLiteral("does not take images")),
                 qPrintable(text.error));
    }

    // A projector that cannot serve the model is left out: the model loads, and says why (a llama
    // takes LLaVA's projectors, not Gemma 3's).
    void aWrongProjectorLeavesTheModelTextOnly() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadForImages(
            host, QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")),
            imageTestSettings(QString::fromStdString(m_projector))));
        QVERIFY(!host.model().vision);
        QVERIFY2(host.model().visionNote.contains(QStringLiteral("belongs to another model")),
                 qPrintable(host.model().visionNote));
    }
};

QTEST_GUILESS_MAIN(TestEngineHostImages)
#include "test_engine_host_images.moc"
