// Images through the engine (a synthesized Gemma 3 with its projector): a follow-up about the
// same image reuses its tokens from the prefix cache and answers as a fresh engine does, another
// image of the same size does not, a text-only model refuses images, prompts whose markers and
// images disagree are refused, and the engine encodes images on its own thread between steps
// (asked from other threads while a reply streams, or from a sink on that thread).
#include "hearth/engine.h"
#include "hearth/projector.h"
#include "hearth/vision.h"
#include "gemma3_vision_files.h"
#include "test_support.h"
#include "token_collector.h"

#include <QTemporaryDir>
#include <QtTest>

#include <thread>

using namespace hearth;

namespace {

// A width x height picture whose pixels depend on seed.
Image picture(int width, int height, int seed) {
    Image im;
    im.width = width;
    im.height = height;
    im.rgb.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = uint8_t((i * 7 + size_t(seed) * 131 + i / 97) % 256);
    return im;
}

// A collector that asks the engine for an image's embeddings from its first token's callback,
// that is from the engine thread.
class EncodingSink : public test::TokenCollector {
public:
    EncodingSink(Engine* engine, Image image) : m_engine(engine), m_image(std::move(image)) {}
    void onToken(const TokenInfo& t) override {
        if (!m_asked) {
            m_asked = true;
            fromSink = m_engine->encodeImage(m_image);
        }
        test::TokenCollector::onToken(t);
    }
    Result<std::shared_ptr<const ImageEmbeddings>> fromSink = Status(ErrorCode::Internal, "never asked");

private:
    Engine* m_engine;
    Image m_image;
    bool m_asked = false;
};

} // namespace

class TestEngineImages : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model, m_projector;
    std::unique_ptr<VisionEncoder> m_encoder;
    std::shared_ptr<const ImageEmbeddings> m_first, m_second;

    std::unique_ptr<Engine> engine(const std::string& projector = {}) {
        EngineConfig c;
        c.modelPath = m_model;
        c.projectorPath = projector;
        c.contextLength = 256;
        c.kvMemoryBytes = 8ull << 20;
        c.threads = 2;
        auto e = Engine::create(c);
        return e.isOk() ? std::move(e).value() : nullptr;
    }

    // The greedy answer (6 tokens) to `text` with `image` at its marker, and the request's usage.
    std::pair<std::vector<int32_t>, Usage> ask(Engine& e, const std::string& text,
                                               std::shared_ptr<const ImageEmbeddings> image) {
        std::vector<PromptImage> images{PromptImage{0, std::move(image)}};
        auto info = readProjector(m_projector);
        if (!info) return {};
        auto ids = encodeWithImages(e.tokenizer(), text, true, images, *info, e.model().nVocab);
        if (!ids) return {};
        auto sink = std::make_shared<test::TokenCollector>();
        GenerationRequest r = test::greedyRequest(*ids, sink, 6);
        r.images = images;
        if (!e.submit(r).isOk() || !sink->waitDone() || !sink->error.isOk()) return {};
        return {sink->tokens(), sink->usage};
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        const QString error = test::synthGemma3WithProjector(m_dir.path(), m_model, m_projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        auto enc = VisionEncoder::open(m_projector, VisionOptions{"cpu", 2});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        m_encoder = std::move(enc).value();
        auto a = m_encoder->encode(picture(80, 50, 1));
        auto b = m_encoder->encode(picture(80, 50, 2));
        QVERIFY(a.isOk() && b.isOk());
        QVERIFY(a->hash != b->hash);
        QVERIFY(a->values != b->values);
        m_first = std::make_shared<const ImageEmbeddings>(std::move(a).value());
        m_second = std::make_shared<const ImageEmbeddings>(std::move(b).value());
    }

    void aFollowUpAboutTheSameImageReusesIt() {
        auto e = engine();
        QVERIFY(e);
        QVERIFY(e->model().takesImages);
        const std::string turn = "Look: <__media__> What is it?";
        const auto [answer, usage] = ask(*e, turn, m_first);
        QCOMPARE(answer.size(), size_t(6));
        QCOMPARE(usage.cachedPromptTokens, 0);
        // The follow-up repeats the first turn: every block through the image comes from the
        // cache (the image sits at 11..26, blocks of 16: the first two blocks, 32 tokens).
        const std::string followUp = turn + " It looks like a pattern. And the colours?";
        const auto [again, reused] = ask(*e, followUp, m_first);
        QCOMPARE(again.size(), size_t(6));
        QVERIFY2(reused.cachedPromptTokens >= 32, qPrintable(QString::number(reused.cachedPromptTokens)));
        // The same answer as an engine that computes everything.
        auto fresh = engine();
        const auto [freshAnswer, freshUsage] = ask(*fresh, followUp, m_first);
        QCOMPARE(freshUsage.cachedPromptTokens, 0);
        QCOMPARE(again, freshAnswer);
    }

    void anotherImageOfTheSameSizeIsNotReused() {
        auto e = engine();
        QVERIFY(e);
        const std::string turn = "Look: <__media__> What is it?";
        QCOMPARE(ask(*e, turn, m_first).first.size(), size_t(6));
        const auto [answer, usage] = ask(*e, turn, m_second);
        QCOMPARE(answer.size(), size_t(6));
        QCOMPARE(usage.cachedPromptTokens, 0); // block 0 already holds image positions
        auto fresh = engine();
        QCOMPARE(answer, ask(*fresh, turn, m_second).first);
    }

    void aTextOnlyModelRefusesImages() {
        std::string textOnly;
        const QString synth = test::synthTextOnlyModel(m_dir.path(), textOnly); // qwen3-tiny
        QVERIFY2(synth.isEmpty(), qPrintable(synth));
        EngineConfig c;
        c.modelPath = textOnly;
        c.contextLength = 256;
        c.kvMemoryBytes = 4ull << 20;
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        QVERIFY(!(*e)->model().takesImages);
        auto sink = std::make_shared<test::TokenCollector>();
        GenerationRequest r = test::greedyRequest(std::vector<int32_t>(20, 5), sink, 2);
        r.images.push_back({2, m_first});
        auto id = (*e)->submit(r);
        QVERIFY(!id.isOk());
        QCOMPARE(id.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(id.status().message().find("does not take images") != std::string::npos,
                 id.status().message().c_str());
    }

    void markersAndImagesMustAgree() {
        auto e = engine();
        QVERIFY(e);
        auto info = readProjector(m_projector);
        QVERIFY(info.isOk());
        std::vector<PromptImage> one{PromptImage{0, m_first}};
        auto twoMarkers = encodeWithImages(e->tokenizer(), "<__media__> and <__media__>", true, one, *info,
                                           e->model().nVocab);
        QVERIFY(!twoMarkers.isOk());
        QCOMPARE(twoMarkers.status().code(), ErrorCode::InvalidArgument);
        auto noMarker = encodeWithImages(e->tokenizer(), "no marker", true, one, *info, e->model().nVocab);
        QVERIFY(!noMarker.isOk());
        // An image placed over the prompt's end, or overlapping another, is refused by submit.
        auto sink = std::make_shared<test::TokenCollector>();
        GenerationRequest r = test::greedyRequest(std::vector<int32_t>(20, 5), sink, 2);
        r.images.push_back({10, m_first}); // 16 tokens from 10: past the 20-token prompt
        QCOMPARE(e->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.prompt.assign(60, 5);
        const std::vector<int32_t> first = imagePlaceholders(*m_first, e->model().nVocab);
        const std::vector<int32_t> second = imagePlaceholders(*m_second, e->model().nVocab);
        std::copy(first.begin(), first.end(), r.prompt.begin());
        std::copy(second.begin(), second.end(), r.prompt.begin() + 30);
        r.images = {PromptImage{0, m_first}, PromptImage{8, m_second}}; // overlapping
        QCOMPARE(e->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.images = {PromptImage{0, m_second}}; // another image's placeholders
        auto wrong = e->submit(r);
        QCOMPARE(wrong.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(wrong.status().message().find("placeholder") != std::string::npos, wrong.status().message().c_str());
        r.images = {PromptImage{0, m_first}, PromptImage{30, m_second}}; // as encodeWithImages places them
        QVERIFY(e->submit(r).isOk());
        QVERIFY(sink->waitDone());
        QVERIFY2(sink->error.isOk(), sink->error.toString().c_str());
    }

    // Two threads ask for images while a reply streams, and the reply's own sink asks from the
    // engine thread: each gets the embeddings the encoder gives alone, nothing waits forever, and
    // an image asked for again is the one kept.
    void imagesAreEncodedOnTheEngineThread() {
        auto e = engine(m_projector);
        QVERIFY(e);
        auto third = m_encoder->encode(picture(80, 50, 3));
        QVERIFY(third.isOk());
        auto sink = std::make_shared<EncodingSink>(e.get(), picture(80, 50, 3));
        QVERIFY(e->submit(test::greedyRequest(std::vector<int32_t>(20, 5), sink, 24)).isOk());
        Result<std::shared_ptr<const ImageEmbeddings>> a = Status(ErrorCode::Internal, "not run");
        Result<std::shared_ptr<const ImageEmbeddings>> b = a;
        std::thread ta([&] { a = e->encodeImage(picture(80, 50, 1)); });
        std::thread tb([&] { b = e->encodeImage(picture(80, 50, 2)); });
        ta.join();
        tb.join();
        QVERIFY(sink->waitDone());
        QVERIFY2(sink->error.isOk(), sink->error.toString().c_str());
        QCOMPARE(sink->tokens().size(), size_t(24));
        QVERIFY2(a.isOk() && b.isOk(), (a.isOk() ? b : a).status().toString().c_str());
        QVERIFY2(sink->fromSink.isOk(), sink->fromSink.status().toString().c_str());
        QCOMPARE((*a)->values, m_first->values);
        QCOMPARE((*b)->values, m_second->values);
        QCOMPARE((*sink->fromSink)->values, third->values);
        auto again = e->encodeImage(picture(80, 50, 1));
        QVERIFY(again.isOk());
        QCOMPARE(again->get(), a->get());
        const EngineStats stats = e->stats();
        QCOMPARE(stats.imagesEncoded, uint64_t(3));
        QVERIFY(stats.imageEncodeSeconds > 0.0);
    }
};

QTEST_GUILESS_MAIN(TestEngineImages)
#include "test_engine_images.moc"
