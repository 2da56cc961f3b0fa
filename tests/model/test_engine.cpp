// The engine end to end on stories260K: the reference's greedy tokens through the public API,
// batch invariance with 16 concurrent requests, cancellation freeing KV blocks, prefix reuse
// across requests, and clear errors at submit time.
#include "hearth/devices.h"
#include "hearth/engine.h"
#include "engine_device_checks.h"
#include "test_support.h"
#include "token_collector.h"

#include <QtTest>

#include <condition_variable>
#include <mutex>

using namespace hearth;

namespace {

const std::vector<int32_t>& kPrompt = hearth::test::kStoriesPrompt;
const std::vector<int32_t>& kReference = hearth::test::kStoriesGreedy;

using test::testDevice;
using test::TokenCollector;

GenerationRequest greedy(std::shared_ptr<TokenCollector> sink, int maxTokens = 64) {
    return test::greedyRequest(kPrompt, std::move(sink), maxTokens);
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> m_engine;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        if (testDevice() != "cpu" && !findDevice(listDevices(), testDevice()))
            QSKIP(qPrintable(QStringLiteral("no device %1 here").arg(QString::fromStdString(testDevice()))));
        qInfo("engine on %s", testDevice().c_str());
        EngineConfig c;
        c.modelPath = hearth::test::testDataPath("models/stories260K.gguf");
        c.contextLength = 512;
        c.kvMemoryBytes = 8ull << 20;
        c.device = testDevice();
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
        QCOMPARE(m_engine->model().architecture, std::string("llama"));
        QCOMPARE(m_engine->model().eogTokens, std::vector<int32_t>{2});
    }

    void greedyMatchesReference() {
        auto sink = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(greedy(sink)).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Length);
        QCOMPARE(sink->tokens(), kReference);
        QCOMPARE(sink->usage.promptTokens, 5);
        QCOMPARE(sink->usage.completionTokens, 64);
    }

    void sixteenConcurrentRequestsGiveTheSameTokens() {
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 16; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            QVERIFY(m_engine->submit(greedy(sinks.back(), 40)).isOk());
        }
        const std::vector<int32_t> expected(kReference.begin(), kReference.begin() + 40);
        for (auto& s : sinks) {
            QVERIFY(s->waitDone());
            QCOMPARE(s->tokens(), expected);
        }
        // Every block is back once the engine thread has published its stats after the step.
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void cancelStopsAndFreesBlocks() {
        auto sink = std::make_shared<TokenCollector>();
        auto id = m_engine->submit(greedy(sink, 400));
        QVERIFY(id.isOk());
        QVERIFY(sink->waitTokens(3));
        m_engine->cancel(*id);
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Cancelled);
        QVERIFY(sink->tokens().size() < 400);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    // The stats say what runs while a step is in flight (a long prompt step on a slow device
    // used to read "running 0 · waiting 0"): here the step is held inside its first token.
    void statsShowTheStepInFlight() {
        struct HeldSink : TokenSink {
            std::mutex mu;
            std::condition_variable cv;
            bool held = false, released = false, done = false;
            void onToken(const TokenInfo&) override {
                std::unique_lock<std::mutex> lock(mu);
                held = true;
                cv.notify_all();
                cv.wait(lock, [this] { return released; });
            }
            void onFinish(FinishReason, const Usage&) override { end(); }
            void onError(const Status&) override { end(); }
            void end() {
                std::lock_guard<std::mutex> lock(mu);
                done = true;
                cv.notify_all();
            }
        };
        auto sink = std::make_shared<HeldSink>();
        GenerationRequest r;
        r.prompt = kPrompt;
        r.maxTokens = 2;
        r.sampling.temperature = 0.0f;
        r.sink = sink;
        QVERIFY(m_engine->submit(std::move(r)).isOk());
        bool held = false;
        {
            std::unique_lock<std::mutex> lock(sink->mu);
            held = sink->cv.wait_for(lock, std::chrono::seconds(20), [&] { return sink->held; });
        }
        const int running = m_engine->stats().running;
        {
            std::lock_guard<std::mutex> lock(sink->mu);
            sink->released = true; // before any check, so that a failure does not leave it held
        }
        sink->cv.notify_all();
        {
            std::unique_lock<std::mutex> lock(sink->mu);
            QVERIFY(sink->cv.wait_for(lock, std::chrono::seconds(20), [&] { return sink->done; }));
        }
        QVERIFY(held);
        QCOMPARE(running, 1);
    }

    void reusesPrefixAcrossRequests() {
        GenerationRequest a = greedy(std::make_shared<TokenCollector>(), 4);
        a.prompt = kPrompt;
        // 69 tokens: 4 full blocks. (Not the reference continuation: the earlier tests' generated
        // tokens are in the cache already, which the engine rightly reuses.)
        for (auto it = kReference.rbegin(); it != kReference.rend(); ++it) a.prompt.push_back(*it);
        auto first = std::static_pointer_cast<TokenCollector>(a.sink);
        QVERIFY(m_engine->submit(a).isOk());
        QVERIFY(first->waitDone());
        QCOMPARE(first->usage.cachedPromptTokens, 0);
        GenerationRequest b = a;
        auto second = std::make_shared<TokenCollector>();
        b.sink = second;
        QVERIFY(m_engine->submit(b).isOk());
        QVERIFY(second->waitDone());
        QCOMPARE(second->usage.cachedPromptTokens, 64);
        QCOMPARE(second->tokens(), first->tokens());
    }

    // A prompt read over several steps says how far it is after each step but the last (which
    // samples the first token); one read in one step, or from the prefix cache, says nothing.
    void promptProgressIsSaid() {
        struct ProgressSink final : TokenCollector {
            void onPromptProgress(int32_t done, int32_t total) override {
                std::lock_guard<std::mutex> lock(mu);
                seen.emplace_back(done, total);
            }
            std::mutex mu;
            std::vector<std::pair<int32_t, int32_t>> seen;
        };
        EngineConfig c;
        c.modelPath = hearth::test::testDataPath("models/stories260K.gguf");
        c.contextLength = 256;
        c.kvMemoryBytes = 4ull << 20;
        c.maxBatchedTokens = 16;
        c.device = testDevice();
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        std::vector<int32_t> prompt = kPrompt; // 69 tokens: 16 + 16 + 16 + 16 + 5
        for (auto it = kReference.rbegin(); it != kReference.rend(); ++it) prompt.push_back(*it);
        auto sink = std::make_shared<ProgressSink>();
        QVERIFY((*e)->submit(test::greedyRequest(prompt, sink, 4)).isOk());
        QVERIFY(sink->waitDone());
        using Seen = std::vector<std::pair<int32_t, int32_t>>;
        QCOMPARE(sink->seen, (Seen{{16, 69}, {32, 69}, {48, 69}, {64, 69}}));
        auto again = std::make_shared<ProgressSink>();
        QVERIFY((*e)->submit(test::greedyRequest(prompt, again, 4)).isOk());
        QVERIFY(again->waitDone());
        QCOMPARE(again->usage.cachedPromptTokens, 64);
        QCOMPARE(again->seen, Seen{});
        QCOMPARE(again->tokens(), sink->tokens());
    }

    void refusesBadRequests() {
        auto sink = std::make_shared<TokenCollector>();
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

    void streamsTextThatMatchesDecode() {
        auto sink = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(greedy(sink)).isOk());
        QVERIFY(sink->waitDone());
        tokenizer::DecodeOptions o;
        o.stripLeadingSpace = false;
        o.cleanSpaces = false;
        auto text = m_engine->tokenizer().decode(kReference, o);
        QVERIFY(text.isOk());
        QVERIFY(!text->empty());
        QCOMPARE(sink->text(), *text);
    }

    void stopStringEndsBeforeTheMatch() {
        auto full = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(greedy(full)).isOk());
        QVERIFY(full->waitDone());
        // A stop string that spans token boundaries in the middle of the text.
        const size_t at = full->text().size() / 2;
        const std::string stop = full->text().substr(at, 7);
        const size_t first = full->text().find(stop);
        auto sink = std::make_shared<TokenCollector>();
        GenerationRequest r = greedy(sink);
        r.stopStrings = {"never appears in stories", stop};
        QVERIFY(m_engine->submit(r).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Stop);
        QCOMPARE(sink->text(), full->text().substr(0, first));
        QVERIFY(sink->tokens().size() < kReference.size());
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
        // The engine says which stop string ended the text: the one found first in it, whatever
        // the order of the list; none when the text ended otherwise.
        QCOMPARE(sink->choiceStops.at(0), stop);
        QCOMPARE(full->choiceStops.at(0), std::string());
        const std::string later = full->text().substr(at + 12, 6);
        QVERIFY(full->text().find(later) > first);
        auto both = std::make_shared<TokenCollector>();
        GenerationRequest r2 = greedy(both);
        r2.stopStrings = {later, stop};
        QVERIFY(m_engine->submit(r2).isOk());
        QVERIFY(both->waitDone());
        QCOMPARE(both->choiceStops.at(0), stop);
        QCOMPARE(both->text(), full->text().substr(0, first));

        GenerationRequest bad = greedy(sink);
        bad.stopStrings = {""};
        QCOMPARE(m_engine->submit(bad).status().code(), ErrorCode::InvalidArgument);
        bad.stopStrings = {std::string("\xff\xfe")};
        QCOMPARE(m_engine->submit(bad).status().code(), ErrorCode::InvalidArgument);
    }

    void nChoicesShareThePromptAndMatchSingleRequests() {
        // Greedy: every choice is the reference continuation (forked K/V must be right).
        auto sink = std::make_shared<TokenCollector>();
        GenerationRequest r = greedy(sink, 40);
        r.n = 4;
        QVERIFY(m_engine->submit(r).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->choiceTokens.size(), size_t(4));
        const std::vector<int32_t> expected(kReference.begin(), kReference.begin() + 40);
        for (const auto& t : sink->choiceTokens) QCOMPARE(t, expected);
        QCOMPARE(sink->choiceReasons.size(), size_t(4));
        QCOMPARE(sink->usage.completionTokens, 160);
        QCOMPARE(sink->usage.promptTokens, 5);

        // Sampled: choice i is what a single request with seed + i gives.
        auto multi = std::make_shared<TokenCollector>();
        GenerationRequest m = greedy(multi, 30);
        m.n = 3;
        m.sampling.temperature = 1.0f;
        m.sampling.seed = 1234;
        QVERIFY(m_engine->submit(m).isOk());
        QVERIFY(multi->waitDone());
        QCOMPARE(multi->choiceTokens.size(), size_t(3));
        for (int i = 0; i < 3; ++i) {
            auto single = std::make_shared<TokenCollector>();
            GenerationRequest one = m;
            one.n = 1;
            one.sampling.seed = 1234 + uint64_t(i);
            one.sink = single;
            QVERIFY(m_engine->submit(one).isOk());
            QVERIFY(single->waitDone());
            QCOMPARE(multi->choiceTokens[size_t(i)], single->tokens());
        }
        QVERIFY(multi->choiceTokens[0] != multi->choiceTokens[1]);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
        GenerationRequest bad = greedy(sink);
        bad.n = 0;
        QCOMPARE(m_engine->submit(bad).status().code(), ErrorCode::InvalidArgument);
        bad.n = 129;
        QCOMPARE(m_engine->submit(bad).status().code(), ErrorCode::InvalidArgument);
    }

    void cancelOfNChoicesEndsThemAll() {
        auto sink = std::make_shared<TokenCollector>();
        GenerationRequest r = greedy(sink, 400);
        r.n = 3;
        auto id = m_engine->submit(r);
        QVERIFY(id.isOk());
        QVERIFY(sink->waitTokens(3));
        m_engine->cancel(*id);
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Cancelled);
        QCOMPARE(sink->choiceReasons.size(), size_t(3));
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void kvCacheTypes() {
        for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0}) {
            EngineConfig c;
            c.modelPath = hearth::test::testDataPath("models/stories260K.gguf");
            c.contextLength = 256;
            c.kvMemoryBytes = 2ull << 20;
            c.kvType = type;
            c.device = testDevice();
            auto e = Engine::create(c);
            if (!e.isOk() && e.status().code() == ErrorCode::Unsupported && testDevice() != "cpu") {
                qInfo("kv %s on %s: %s", kvTypeName(type), testDevice().c_str(), e.status().toString().c_str());
                continue;
            }
            QVERIFY2(e.isOk(), e.status().toString().c_str());
            QCOMPARE((*e)->model().kvType, std::string(kvTypeName(type)));
            auto sink = std::make_shared<TokenCollector>();
            QVERIFY((*e)->submit(greedy(sink)).isOk());
            QVERIFY(sink->waitDone());
            size_t same = 0;
            while (same < sink->tokens().size() && sink->tokens()[same] == kReference[same]) ++same;
            qInfo("kv %s: %zu of 64 greedy tokens equal the reference, cache %llu bytes",
                  kvTypeName(type), same, (unsigned long long)(*e)->model().kvBytes);
            if (type != KvType::Q8_0) QCOMPARE(sink->tokens(), kReference);
            else QVERIFY(same >= 16);
        }
        QCOMPARE(kvTypeFromName("Q8_0").value(), KvType::Q8_0);
        QVERIFY(!kvTypeFromName("q4").isOk());
    }

    void chatUsesTheBuiltinTemplateWhenTheModelHasNone() {
        QVERIFY(m_engine->model().chatTemplateBuiltin);
        auto ids = m_engine->encodeChat(tmpl::singleUserMessage("Hi"));
        QVERIFY(ids.isOk());
        auto text = m_engine->renderChat(tmpl::singleUserMessage("Hi"));
        QVERIFY(text.isOk());
        QCOMPARE(*text, std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
        QCOMPARE(ids->front(), m_engine->model().bosToken);
    }

    void stopsAtEndOfGeneration() {
        auto sink = std::make_shared<TokenCollector>();
        GenerationRequest r = greedy(sink, 300);
        r.ignoreEos = false;
        r.stopTokens = {kReference[10]}; // pretend token 426 ends generation
        QVERIFY(m_engine->submit(r).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Stop);
        QCOMPARE(sink->tokens(), std::vector<int32_t>(kReference.begin(), kReference.begin() + 10));
    }
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
