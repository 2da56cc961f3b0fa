// Images through hearth-server over loopback HTTP: a synthesized Gemma 3 with its projector
// answers a chat holding an image_url data URI as hearth-cli run does, a follow-up reuses the
// image's tokens, Anthropic's image blocks, the Responses API's input_image and Ollama's images
// (chat and generate) give the same answers, /v1/models and /api/show say "vision", and bad
// images, URLs, too many images and a text-only model get 400s that name the problem.
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

    void everyDialectTakesImages() {
        const uint64_t encodedBefore = m_engine->stats().imagesEncoded;
        const QByteArray picture = png(64, 48);
        const std::string b64 = QString::fromLatin1(picture.toBase64()).toStdString();
        using A = std::vector<OJson>; // JSON arrays spelled out: a braced list of one is ambiguous
        auto post = [&](const char* path, const OJson& body) {
            auto res = postJson(port(), path, body.dump());
            if (!res || res->status != 200) {
                qWarning("%s: %s", path, res ? res->body.c_str() : "no answer");
                return OJson();
            }
            return parse(res->body);
        };
        auto user = [](OJson content) {
            OJson m = OJson::object();
            m["role"] = "user";
            m["content"] = std::move(content);
            return m;
        };
        auto text = [](const char* type, const char* t) {
            OJson p = OJson::object();
            p["type"] = type;
            p["text"] = t;
            return p;
        };
        // OpenAI's parts "Look:", the image, "What is it?" are joined by newlines; Anthropic's
        // blocks and the Responses API's parts the same way, so the three prompts are one.
        const OJson openai = post("/v1/chat/completions", parse(chat({imagePart(dataUri(picture))})));
        QVERIFY(!openai.is_null());
        const std::string answer = openai["choices"][0]["message"]["content"].get<std::string>();
        OJson source = OJson::object();
        source["type"] = "base64";
        source["media_type"] = "image/png";
        source["data"] = b64;
        OJson imageBlock = OJson::object();
        imageBlock["type"] = "image";
        imageBlock["source"] = source;
        OJson anthropicBody = OJson::object();
        anthropicBody["model"] = "m";
        anthropicBody["max_tokens"] = 6;
        anthropicBody["temperature"] = 0;
        anthropicBody["messages"] = A{user(A{text("text", "Look:"), imageBlock, text("text", "What is it?")})};
        const OJson anthropic = post("/v1/messages", anthropicBody);
        QVERIFY(!anthropic.is_null());
        QCOMPARE(QString::fromStdString(anthropic["content"][0]["text"].get<std::string>()),
                 QString::fromStdString(answer));
        QCOMPARE(anthropic["usage"]["input_tokens"].get<int>() + anthropic["usage"]["cache_read_input_tokens"].get<int>(),
                 openai["usage"]["prompt_tokens"].get<int>());
        auto counted = postJson(port(), "/v1/messages/count_tokens", anthropicBody.dump());
        QVERIFY(counted && counted->status == 200);
        QCOMPARE(parse(counted->body)["input_tokens"].get<int>(), openai["usage"]["prompt_tokens"].get<int>());
        OJson inputImage = OJson::object();
        inputImage["type"] = "input_image";
        inputImage["image_url"] = dataUri(picture);
        OJson responsesBody = OJson::object();
        responsesBody["model"] = "m";
        responsesBody["max_output_tokens"] = 6;
        responsesBody["temperature"] = 0;
        responsesBody["input"] = A{user(A{text("input_text", "Look:"), inputImage, text("input_text", "What is it?")})};
        const OJson responses = post("/v1/responses", responsesBody);
        QVERIFY(!responses.is_null());
        std::string responsesText;
        for (const OJson& item : responses["output"])
            if (item["type"] == "message") responsesText = item["content"][0]["text"].get<std::string>();
        QCOMPARE(QString::fromStdString(responsesText), QString::fromStdString(answer));

        // Ollama puts a message's images before its text; /api/generate does the same with its prompt.
        OJson firstBody = OJson::object();
        firstBody["model"] = "m";
        firstBody["temperature"] = 0;
        firstBody["max_tokens"] = 6;
        firstBody["messages"] = A{user(A{imagePart(dataUri(picture)), text("text", "Look:\nWhat is it?")})};
        const OJson first = post("/v1/chat/completions", firstBody);
        QVERIFY(!first.is_null());
        const std::string imageFirst = first["choices"][0]["message"]["content"].get<std::string>();
        OJson options = OJson::object();
        options["temperature"] = 0;
        options["num_predict"] = 6;
        options["repeat_penalty"] = 1; // Ollama's default 1.1 would change greedy answers
        OJson ollamaMessage = user("Look:\nWhat is it?");
        ollamaMessage["images"] = A{b64};
        OJson chatBody = OJson::object();
        chatBody["model"] = "m";
        chatBody["stream"] = false;
        chatBody["options"] = options;
        chatBody["messages"] = A{ollamaMessage};
        const OJson ollamaChat = post("/api/chat", chatBody);
        QVERIFY(!ollamaChat.is_null());
        QCOMPARE(QString::fromStdString(ollamaChat["message"]["content"].get<std::string>()),
                 QString::fromStdString(imageFirst));
        OJson generateBody = OJson::object();
        generateBody["model"] = "m";
        generateBody["stream"] = false;
        generateBody["options"] = options;
        generateBody["prompt"] = "Look:\nWhat is it?";
        generateBody["images"] = A{b64};
        const OJson generate = post("/api/generate", generateBody);
        QVERIFY(!generate.is_null());
        QCOMPARE(QString::fromStdString(generate["response"].get<std::string>()), QString::fromStdString(imageFirst));
        QCOMPARE(generate["prompt_eval_count"].get<int>(), first["usage"]["prompt_tokens"].get<int>());
        // Raw: the images before the prompt as given, no template.
        generateBody["raw"] = true;
        generateBody["prompt"] = "A picture of";
        generateBody["images"] = A{b64, b64};
        const OJson raw = post("/api/generate", generateBody);
        QVERIFY(!raw.is_null());
        const int64_t perImage = m_engine->projector()->tokensPerImage;
        QVERIFY2(raw["prompt_eval_count"].get<int64_t>() > 2 * perImage, raw.dump().c_str());
        // One picture through every dialect: encoded once, and /metrics counts it.
        QCOMPARE(m_engine->stats().imagesEncoded, encodedBefore + 1);
        auto metrics = client(port()).Get("/metrics");
        QVERIFY(metrics && metrics->status == 200);
        QVERIFY2(metrics->body.find("hearth_images_encoded_total " + std::to_string(encodedBefore + 1)) != std::string::npos,
                 metrics->body.c_str());
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
        // The other dialects' bad images.
        const std::string tiny = QString::fromLatin1(png(8, 8).toBase64()).toStdString();
        auto anthropicImage = [](const OJson& source) {
            OJson block = OJson::object();
            block["type"] = "image";
            block["source"] = source;
            OJson m = OJson::object();
            m["role"] = "user";
            m["content"] = std::vector<OJson>{block};
            OJson body = OJson::object();
            body["model"] = "m";
            body["max_tokens"] = 4;
            body["messages"] = std::vector<OJson>{m};
            return body.dump();
        };
        auto base64Source = [](const char* mediaType, const std::string& data) {
            return OJson{{"type", "base64"}, {"media_type", mediaType}, {"data", data}};
        };
        auto responsesImage = [](const char* role, const OJson& part) {
            OJson m = OJson::object();
            m["role"] = role;
            m["content"] = std::vector<OJson>{part};
            OJson body = OJson::object();
            body["model"] = "m";
            body["input"] = std::vector<OJson>{m};
            return body.dump();
        };
        auto generateWith = [](const char* image) {
            OJson body = OJson::object();
            body["model"] = "m";
            body["prompt"] = "x";
            body["images"] = std::vector<OJson>{OJson(image)};
            return body.dump();
        };
        const struct {
            const char* path;
            std::string body, mentions;
        } others[] = {
            {"/v1/messages", anthropicImage(OJson{{"type", "url"}, {"url", "https://example.com/a.png"}}),
             "does not fetch"},
            {"/v1/messages", anthropicImage(base64Source("image/tiff", tiny)), "media_type"},
            {"/v1/messages", anthropicImage(base64Source("image/png", "%%%")), "base64"},
            {"/v1/messages", anthropicImage(base64Source("image/png", "AAAAAAAA")), "image 1"},
            {"/v1/responses", responsesImage("user", OJson{{"type", "input_image"}, {"file_id", "file-1"}}), "file_id"},
            {"/v1/responses",
             responsesImage("assistant", OJson{{"type", "input_image"}, {"image_url", "data:image/png;base64," + tiny}}),
             "user messages"},
            {"/api/generate", generateWith("@@"), "images[0]"},
            {"/api/generate", generateWith("AAAAAAAA"), "image 1"},
        };
        for (const auto& c : others) {
            auto res = postJson(port(), c.path, c.body);
            QVERIFY(res);
            QVERIFY2(res->status == 400, (std::string(c.path) + ": " + res->body).c_str());
            QVERIFY2(res->body.find(c.mentions) != std::string::npos, (std::string(c.path) + ": " + res->body).c_str());
        }
        // The server still answers.
        auto ok = postJson(port(), "/v1/chat/completions", chat({}));
        QVERIFY(ok && ok->status == 200);
    }

    void aModelsFolderPairsEachModelWithItsProjector() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir folder;
        QVERIFY(QFile::copy(QString::fromStdString(m_model), folder.filePath(QStringLiteral("gemma3.gguf"))));
        QVERIFY(QFile::copy(QString::fromStdString(m_projector), folder.filePath(QStringLiteral("mmproj-gemma3-F16.gguf"))));
        QVERIFY(QFile::copy(QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                            folder.filePath(QStringLiteral("stories.gguf"))));
        for (const bool find : {true, false}) {
            server::ModelDirectoryConfig dc;
            dc.dir = folder.path().toStdString();
            dc.engine.contextLength = 256;
            dc.engine.threads = 1;
            dc.findProjectors = find;
            auto provider = server::makeDirectoryModelProvider(dc);
            std::vector<std::string> ids;
            for (const server::ModelEntry& e : provider->list()) ids.push_back(e.id);
            QCOMPARE(ids, (std::vector<std::string>{"gemma3", "stories"})); // the projector is no model
            std::string id;
            auto gemma = provider->acquire("gemma3", id);
            QVERIFY2(gemma.isOk(), gemma.status().toString().c_str());
            QCOMPARE((*gemma)->model().vision, find);
            auto stories = provider->acquire("stories", id); // a llama: Gemma 3's projector is another model's
            QVERIFY2(stories.isOk(), stories.status().toString().c_str());
            QVERIFY(!(*stories)->model().vision);
            QVERIFY(!provider->acquire("mmproj-gemma3-F16", id).isOk());
        }
    }

    void aTextOnlyModelRefusesImages() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        std::string textOnly;
        const QString synth = test::synthTextOnlyModel(dir.path(), textOnly); // qwen3-tiny
        QVERIFY2(synth.isEmpty(), qPrintable(synth));
        EngineConfig ec;
        ec.modelPath = textOnly;
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
        // A llama takes images with LLaVA's projector only: Gemma 3's is another model's.
        EngineConfig llama = withProjector;
        llama.modelPath = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        auto other = Engine::create(llama);
        QVERIFY(!other.isOk());
        QVERIFY2(other.status().message().find("belongs to another model") != std::string::npos,
                 other.status().message().c_str());
    }
};

QTEST_GUILESS_MAIN(TestServerImages)
#include "test_server_images.moc"
