// Images through hearth-server's OpenAI chat endpoint, over loopback HTTP: a synthesized Gemma 3
// with its projector answers a chat holding an image_url data URI as hearth-cli run does, a
// follow-up reuses the image's tokens, /v1/models and /api/show say "vision", and bad images,
// URLs, too many images and a text-only model get 400s that name the problem.
#include "http_test_support.h"
#include "gemma3_vision_files.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/server.h"

#include <QBuffer>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;
using namespace hearth::test;

namespace {

// A PNG of a width x height picture of gradients.
QByteArray png(int width, int height) {
    QImage q(width, height, QImage::Format_RGB888);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) q.setPixelColor(x, y, QColor((3 * x) % 256, (5 * y) % 256, (x ^ y) % 256));
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    q.save(&buffer, "PNG");
    return bytes;
}

std::string dataUri(const QByteArray& bytes) {
    return "data:image/png;base64," + QString::fromLatin1(bytes.toBase64()).toStdString();
}

// A chat request: "Look:", then the given image parts, then "What is it?".
std::string chat(const std::vector<OJson>& imageParts, int maxTokens = 6) {
    OJson content = OJson::array();
    content.push_back({{"type", "text"}, {"text", "Look:"}});
    for (const OJson& p : imageParts) content.push_back(p);
    content.push_back({{"type", "text"}, {"text", "What is it?"}});
    OJson body = {{"model", "m"},
                  {"messages", OJson::array({{{"role", "user"}, {"content", content}}})},
                  {"temperature", 0},
                  {"max_tokens", maxTokens}};
    return body.dump();
}

OJson imagePart(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

} // namespace

class TestServerImages : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model, m_projector;
    std::shared_ptr<Engine> m_engine;
    std::unique_ptr<server::Server> m_server;

    int port() const { return m_server->port(); }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        const QString error = test::synthGemma3WithProjector(m_dir.path(), m_model, m_projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        EngineConfig ec;
        ec.modelPath = m_model;
        ec.projectorPath = m_projector;
        ec.contextLength = 512;
        ec.threads = 2;
        auto engine = Engine::create(ec);
        QVERIFY2(engine.isOk(), engine.status().toString().c_str());
        m_engine = std::move(engine).value();
        QVERIFY(m_engine->model().vision);
        server::ServerConfig sc;
        sc.port = 0;
        sc.log = [](const std::string&) {};
        m_server = std::make_unique<server::Server>(sc);
        QVERIFY(m_server->start().isOk());
        m_server->setEngine(m_engine, "m");
    }

    void aChatWithAnImageAnswersAsHearthCliRunDoes() {
        const QByteArray picture = png(90, 70);
        auto res = postJson(port(), "/v1/chat/completions", chat({imagePart(dataUri(picture))}));
        QVERIFY(res);
        QVERIFY2(res->status == 200, res->body.c_str());
        const OJson j = parse(res->body);
        const std::string answer = j["choices"][0]["message"]["content"].get<std::string>();
        QVERIFY(j["usage"]["prompt_tokens"].get<int>() > 16);
        // The same conversation through hearth-cli run --chat (parts joined by newlines).
        const QString file = m_dir.filePath(QStringLiteral("picture.png"));
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(picture);
        }
        QProcess run;
        run.start(test::binDir() + QStringLiteral("/hearth-cli"),
                  {QStringLiteral("run"), QString::fromStdString(m_model), QStringLiteral("--mmproj"),
                   QString::fromStdString(m_projector), QStringLiteral("--image"), file, QStringLiteral("--chat"),
                   QStringLiteral("-p"), QStringLiteral("Look:\n<__media__>\nWhat is it?"), QStringLiteral("--temp"),
                   QStringLiteral("0"), QStringLiteral("-n"), QStringLiteral("6"), QStringLiteral("--print-ids"),
                   QStringLiteral("--threads"), QStringLiteral("2")});
        QVERIFY(run.waitForFinished(300000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(2000).constData());
        std::vector<int32_t> ids;
        for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n'))
            if (line.startsWith(QStringLiteral("generated ids: ")))
                for (const QString& id : line.mid(15).split(' ', Qt::SkipEmptyParts)) ids.push_back(id.toInt());
        QCOMPARE(ids.size(), size_t(6));
        auto text = m_engine->tokenizer().decode(ids);
        QVERIFY(text.isOk());
        QCOMPARE(QString::fromStdString(answer), QString::fromStdString(*text));
        // A follow-up about the same image: its tokens come from the prefix cache.
        auto again = postJson(port(), "/v1/chat/completions", chat({imagePart(dataUri(picture))}));
        QVERIFY(again && again->status == 200);
        const OJson k = parse(again->body);
        QCOMPARE(k["choices"][0]["message"]["content"].get<std::string>(), answer);
        QVERIFY2(k["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>() >= 16, again->body.c_str());
    }

    void theModelListsSayVision() {
        auto c = client(port());
        auto models = c.Get("/v1/models");
        QVERIFY(models && models->status == 200);
        const OJson m = parse(models->body);
        QCOMPARE(m["data"][0]["capabilities"], OJson::array({"vision"}));
        auto show = postJson(port(), "/api/show", R"({"model":"m"})");
        QVERIFY(show && show->status == 200);
        const OJson s = parse(show->body);
        const OJson caps = s["capabilities"];
        QVERIFY2(std::find(caps.begin(), caps.end(), OJson("vision")) != caps.end(), show->body.c_str());
    }

    void badImagesGetClearErrors() {
        struct Case {
            std::string body, mentions;
        };
        const std::vector<OJson> seventeen(17, imagePart(dataUri(png(8, 8))));
        const Case cases[] = {
            {chat({imagePart("https://example.com/cat.png")}), "does not fetch"},
            {chat({imagePart("data:image/png;base64,@@@@")}), "not base64"},
            {chat({imagePart("data:image/png;base64," + QByteArray("not a png at all").toBase64().toStdString())}),
             "image 1"},
            {chat({imagePart(dataUri(png(8, 8)).substr(0, 60))}), "image 1"}, // cut short
            {chat({{{"type", "image_url"}, {"image_url", {{"url", 42}}}}}), "image_url.url"},
            {chat(seventeen), "at most 16"},
            {R"({"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]})",
             "image_url"},
        };
        for (const Case& c : cases) {
            auto res = postJson(port(), "/v1/chat/completions", c.body);
            QVERIFY(res);
            QVERIFY2(res->status == 400, res->body.c_str());
            const OJson j = parse(res->body);
            QVERIFY(isErrorShape(j));
            QVERIFY2(j["error"]["message"].get<std::string>().find(c.mentions) != std::string::npos, res->body.c_str());
        }
        // The server still answers.
        auto ok = postJson(port(), "/v1/chat/completions", chat({}));
        QVERIFY(ok && ok->status == 200);
    }

    void aTextOnlyModelRefusesImages() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        EngineConfig ec;
        ec.modelPath = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        ec.contextLength = 256;
        ec.threads = 1;
        auto engine = Engine::create(ec);
        QVERIFY(engine.isOk());
        server::ServerConfig sc;
        sc.port = 0;
        sc.log = [](const std::string&) {};
        server::Server text(sc);
        QVERIFY(text.start().isOk());
        text.setEngine(std::shared_ptr<Engine>(std::move(engine).value()), "stories");
        auto res = postJson(text.port(), "/v1/chat/completions", chat({imagePart(dataUri(png(8, 8)))}));
        QVERIFY(res);
        QVERIFY2(res->status == 400, res->body.c_str());
        QVERIFY2(res->body.find("does not take images") != std::string::npos, res->body.c_str());
        // And a projector for it is refused at load.
        EngineConfig withProjector = ec;
        withProjector.projectorPath = m_projector;
        auto refused = Engine::create(withProjector);
        QVERIFY(!refused.isOk());
        QVERIFY2(refused.status().message().find("does not take images") != std::string::npos,
                 refused.status().message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestServerImages)
#include "test_server_images.moc"
