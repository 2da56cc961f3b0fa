// The engine end to end on stories260K: the reference's greedy tokens through the public API,
// batch invariance with 16 concurrent requests, cancellation freeing KV blocks, prefix reuse
// across requests, and clear errors at submit time.
#include "hearth/engine.h"
#include "test_support.h"

#include <QtTest>

#include <condition_variable>
#include <mutex>

using namespace hearth;

namespace {

const std::vector<int32_t> kPrompt{1, 403, 407, 261, 378};
const std::vector<int32_t> kReference{
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
    398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};

class Collector : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        std::lock_guard<std::mutex> lock(m_mu);
        tokens.push_back(t.id);
        m_cv.notify_all();
    }
    void onFinish(FinishReason r, const Usage& u) override {
        std::lock_guard<std::mutex> lock(m_mu);
        reason = r;
        usage = u;
        done = true;
        m_cv.notify_all();
    }
    void onError(const Status& s) override {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        done = true;
        m_cv.notify_all();
    }
    bool waitDone(int ms = 60000) {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::milliseconds(ms), [&] { return done; });
    }
    bool waitTokens(size_t n, int ms = 60000) {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::milliseconds(ms),
                             [&] { return tokens.size() >= n || done; });
    }
    std::vector<int32_t> tokens;
    FinishReason reason = FinishReason::Error;
    Usage usage;
    Status error;
    bool done = false;

private:
    std::mutex m_mu;
    std::condition_variable m_cv;
};

GenerationRequest greedy(std::shared_ptr<Collector> sink, int maxTokens = 64) {
    GenerationRequest r;
    r.prompt = kPrompt;
    r.sampling.temperature = 0.0f;
    r.maxTokens = maxTokens;
    r.ignoreEos = true;
    r.sink = std::move(sink);
    return r;
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> m_engine;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        EngineConfig c;
        c.modelPath = hearth::test::testDataPath("models/stories260K.gguf");
        c.contextLength = 512;
        c.kvMemoryBytes = 8ull << 20;
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
        QCOMPARE(m_engine->model().architecture, std::string("llama"));
        QCOMPARE(m_engine->model().eogTokens, std::vector<int32_t>{2});
    }

    void greedyMatchesReference() {
        auto sink = std::make_shared<Collector>();
        QVERIFY(m_engine->submit(greedy(sink)).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Length);
        QCOMPARE(sink->tokens, kReference);
        QCOMPARE(sink->usage.promptTokens, 5);
        QCOMPARE(sink->usage.completionTokens, 64);
    }

    void sixteenConcurrentRequestsGiveTheSameTokens() {
        std::vector<std::shared_ptr<Collector>> sinks;
        for (int i = 0; i < 16; ++i) {
            sinks.push_back(std::make_shared<Collector>());
            QVERIFY(m_engine->submit(greedy(sinks.back(), 40)).isOk());
        }
        const std::vector<int32_t> expected(kReference.begin(), kReference.begin() + 40);
        for (auto& s : sinks) {
            QVERIFY(s->waitDone());
            QCOMPARE(s->tokens, expected);
        }
        // Every block is back once the engine thread has published its stats after the step.
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void cancelStopsAndFreesBlocks() {
        auto sink = std::make_shared<Collector>();
        auto id = m_engine->submit(greedy(sink, 400));
        QVERIFY(id.isOk());
        QVERIFY(sink->waitTokens(3));
        m_engine->cancel(*id);
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Cancelled);
        QVERIFY(sink->tokens.size() < 400);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void reusesPrefixAcrossRequests() {
        GenerationRequest a = greedy(std::make_shared<Collector>(), 4);
        a.prompt = kPrompt;
        // 69 tokens: 4 full blocks. (Not the reference continuation: the earlier tests' generated
        // tokens are in the cache already, which the engine rightly reuses.)
        for (auto it = kReference.rbegin(); it != kReference.rend(); ++it) a.prompt.push_back(*it);
        auto first = std::static_pointer_cast<Collector>(a.sink);
        QVERIFY(m_engine->submit(a).isOk());
        QVERIFY(first->waitDone());
        QCOMPARE(first->usage.cachedPromptTokens, 0);
        GenerationRequest b = a;
        auto second = std::make_shared<Collector>();
        b.sink = second;
        QVERIFY(m_engine->submit(b).isOk());
        QVERIFY(second->waitDone());
        QCOMPARE(second->usage.cachedPromptTokens, 64);
        QCOMPARE(second->tokens, first->tokens);
    }

    void refusesBadRequests() {
        auto sink = std::make_shared<Collector>();
        GenerationRequest tooLong = greedy(sink, 600);
        QCOMPARE(m_engine->submit(tooLong).status().code(), ErrorCode::OutOfRange);
        GenerationRequest badToken = greedy(sink);
        badToken.prompt = {1, 9999};
        QCOMPARE(m_engine->submit(badToken).status().code(), ErrorCode::InvalidArgument);
        GenerationRequest badTemp = greedy(sink);
        badTemp.sampling.temperature = -1.0f;
        QCOMPARE(m_engine->submit(badTemp).status().code(), ErrorCode::InvalidArgument);
        GenerationRequest empty = greedy(sink);
        empty.prompt.clear();
        QCOMPARE(m_engine->submit(empty).status().code(), ErrorCode::InvalidArgument);
    }

    void stopsAtEndOfGeneration() {
        auto sink = std::make_shared<Collector>();
        GenerationRequest r = greedy(sink, 300);
        r.ignoreEos = false;
        r.stopTokens = {kReference[10]}; // pretend token 426 ends generation
        QVERIFY(m_engine->submit(r).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Stop);
        QCOMPARE(sink->tokens, std::vector<int32_t>(kReference.begin(), kReference.begin() + 10));
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
