// The engine on a hybrid model (qwen35-tiny: three gated delta-net layers and one attention layer,
// over stories260K's 512-token vocabulary so that the output head stays small on lavapipe)
// through the public API: 16 concurrent streams equal to the same requests served one at a time,
// prefix reuse through recurrent-state snapshots (a shared 200-token prefix, a chat turn that
// continues the previous one) giving the tokens a cold engine gives, n > 1 forks copying the
// state, cancel freeing it within a step, preemption recomputing it, and the memory check; and
// the concurrency and prefix checks again on lfm2-tiny (short convolutions around attention).
#include "hearth/devices.h"
#include "hearth/engine.h"
#include "test_support.h"
#include "token_collector.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

using test::greedyRequest;
using test::testDevice;
using test::TokenCollector;

// A prompt of n tokens from a seed (BOS first), valid in the 512-token vocabulary.
std::vector<int32_t> makePrompt(int n, int seed) {
    std::vector<int32_t> p{1};
    for (int i = 1; i < n; ++i) p.push_back(int32_t((uint64_t(i) * 7919 + uint64_t(seed) * 104729 + 13) % 200 + 300));
    return p;
}

std::shared_ptr<TokenCollector> run(Engine& e, const std::vector<int32_t>& prompt, int maxTokens, int n = 1) {
    auto sink = std::make_shared<TokenCollector>();
    const auto id = e.submit(greedyRequest(prompt, sink, maxTokens, n));
    if (!id) {
        sink->error = id.status();
        return sink;
    }
    sink->waitDone();
    return sink;
}

} // namespace

class TestEngineHybrid : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_model;
    std::string m_lfm2;
    std::string m_using; // the model engine() loads

    Result<std::unique_ptr<Engine>> engine(bool prefixCaching, uint64_t kvBytes = 0, int maxNumSeqs = 16) {
        EngineConfig c;
        c.modelPath = m_using.empty() ? m_model : m_using;
        c.contextLength = 2048;
        c.kvMemoryBytes = kvBytes;
        c.maxNumSeqs = maxNumSeqs;
        c.prefixCaching = prefixCaching;
        c.threads = 2;
        c.device = testDevice();
        // Requests with a prediction verify every proposal (the tests are about the rollback;
        // the adaptive policy may rightly skip drafting on a model this small).
        c.speculation.adaptive = false;
        return Engine::create(c);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        if (testDevice() != "cpu" && !findDevice(listDevices(), testDevice()))
            QSKIP(qPrintable(QStringLiteral("no device %1 here").arg(QString::fromStdString(testDevice()))));
        qInfo("engine on %s", testDevice().c_str());
        m_model = m_dir.filePath(QStringLiteral("qwen35-tiny.gguf")).toStdString();
        m_lfm2 = m_dir.filePath(QStringLiteral("lfm2-tiny.gguf")).toStdString();
        for (const auto& [preset, path] : {std::pair{QStringLiteral("qwen35-tiny"), m_model},
                                           std::pair{QStringLiteral("lfm2-tiny"), m_lfm2}}) {
            QProcess synth;
            synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                        {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"),
                         QStringLiteral("F32"), QStringLiteral("--vocab"),
                         QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                         QStringLiteral("-o"), QString::fromStdString(path)});
            QVERIFY(synth.waitForFinished(300000));
            QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        }
    }
    void cleanup() { m_using.clear(); }

    void concurrentStreamsEqualSequential() {
        auto e = engine(false);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        QVERIFY((*e)->model().stateSlots >= 16);
        std::vector<std::vector<int32_t>> alone;
        for (int i = 0; i < 16; ++i) {
            auto s = run(**e, makePrompt(12, i), 12);
            QVERIFY2(s->error.isOk(), s->error.toString().c_str());
            alone.push_back(s->tokens());
            QCOMPARE(int(alone.back().size()), 12);
        }
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 16; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            QVERIFY((*e)->submit(greedyRequest(makePrompt(12, i), sinks.back(), 12)).isOk());
        }
        for (int i = 0; i < 16; ++i) {
            QVERIFY(sinks[size_t(i)]->waitDone());
            QCOMPARE(sinks[size_t(i)]->tokens(), alone[size_t(i)]);
        }
        QTRY_COMPARE((*e)->stats().stateSlotsLive, 0);
        // The outputs depend on the prompt (a negative control for the comparison above).
        QVERIFY(alone[0] != alone[1]);
    }

    // lfm2: the convolution window as the state of every convolution layer.
    void lfm2ConcurrentStreamsEqualSequential() {
        m_using = m_lfm2;
        concurrentStreamsEqualSequential();
    }
    void lfm2SharedPrefixComputesOnlyTheRest() {
        m_using = m_lfm2;
        sharedPrefixComputesOnlyTheRest();
    }

    void sharedPrefixComputesOnlyTheRest() {
        auto warm = engine(true);
        auto cold = engine(false);
        QVERIFY2(warm.isOk() && cold.isOk(), "engines");
        const std::vector<int32_t> prefix = makePrompt(200, 77);
        std::vector<int32_t> a = prefix, b = prefix;
        for (int i = 0; i < 8; ++i) {
            a.push_back(260 + i);
            b.push_back(280 + i);
        }
        auto first = run(**warm, a, 8);
        QVERIFY(first->error.isOk());
        QCOMPARE(first->usage.cachedPromptTokens, 0);
        const uint64_t before = (*warm)->stats().prefillTokensComputed;
        auto second = run(**warm, b, 8);
        QVERIFY(second->error.isOk());
        const uint64_t computed = (*warm)->stats().prefillTokensComputed - before;
        qInfo("second request: %d of %zu prompt tokens cached, %llu computed, %d snapshots held",
              second->usage.cachedPromptTokens, b.size(), (unsigned long long)computed,
              (*warm)->stats().stateSnapshots);
        QVERIFY(computed <= 64);
        QVERIFY(second->usage.cachedPromptTokens >= int(b.size()) - 64);
        // The same tokens as an engine that computes the whole prompt.
        auto reference = run(**cold, b, 8);
        QCOMPARE(second->tokens(), reference->tokens());

        // A chat turn continuing the second: its prompt, its answer, and a new message.
        std::vector<int32_t> turn = b;
        const std::vector<int32_t> answer = second->tokens();
        turn.insert(turn.end(), answer.begin(), answer.end());
        for (int i = 0; i < 12; ++i) turn.push_back(460 + i);
        auto next = run(**warm, turn, 8);
        QVERIFY2(next->error.isOk(), next->error.toString().c_str());
        qInfo("chat turn: %d of %zu prompt tokens cached", next->usage.cachedPromptTokens, turn.size());
        QVERIFY(next->usage.cachedPromptTokens >= int(turn.size()) - 12 - 48);
        QCOMPARE(next->tokens(), run(**cold, turn, 8)->tokens());
    }

    void forksCopyTheState() {
        auto e = engine(true);
        QVERIFY(e.isOk());
        const std::vector<int32_t> prompt = makePrompt(70, 5);
        auto one = run(**e, prompt, 24);
        auto three = run(**e, makePrompt(70, 5), 24, 3);
        QVERIFY(three->error.isOk());
        QCOMPARE(int(three->choiceTokens.size()), 3);
        for (const auto& c : three->choiceTokens) QCOMPARE(c, one->tokens());
        QTRY_COMPARE((*e)->stats().stateSlotsLive, 0);
    }

    void cancelFreesTheState() {
        auto e = engine(true);
        QVERIFY(e.isOk());
        auto sink = std::make_shared<TokenCollector>();
        auto id = (*e)->submit(greedyRequest(makePrompt(40, 9), sink, 1500));
        QVERIFY(id.isOk());
        QVERIFY(sink->waitTokens(4));
        QCOMPARE((*e)->stats().stateSlotsLive, 1);
        (*e)->cancel(*id);
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Cancelled);
        QTRY_COMPARE((*e)->stats().stateSlotsLive, 0);
    }

    void preemptionRecomputesTheState() {
        // 10 blocks of 16 positions for 4 requests of 48 + 24 tokens (5 blocks each): some are preempted.
        auto small = engine(false, 10 * 16 * 512, 4);
        auto roomy = engine(false);
        QVERIFY2(small.isOk() && roomy.isOk(), small.isOk() ? "" : small.status().toString().c_str());
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 4; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            QVERIFY((*small)->submit(greedyRequest(makePrompt(48, 40 + i), sinks.back(), 24)).isOk());
        }
        for (int i = 0; i < 4; ++i) {
            QVERIFY(sinks[size_t(i)]->waitDone());
            QVERIFY2(sinks[size_t(i)]->error.isOk(), sinks[size_t(i)]->error.toString().c_str());
            QCOMPARE(sinks[size_t(i)]->tokens(), run(**roomy, makePrompt(48, 40 + i), 24)->tokens());
        }
    }

    void draftsRollBackTheRecurrentState() {
        // Speculative decoding on a hybrid model: a rejected draft's recurrent state is replaced
        // by the state after the last accepted token. An edited prediction forces rejections at
        // every draft position; the output stays that of plain decoding.
        auto e = engine(true, 0, 4);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        QVERIFY((*e)->model().speculationUnavailable.empty());
        const std::vector<int32_t> prompt = makePrompt(40, 5);
        auto plain = run(**e, prompt, 90);
        QVERIFY(plain->error.isOk());
        std::vector<int32_t> edited = plain->tokens();
        for (size_t i = 7; i < edited.size(); i += 11) edited[i] = 301; // a wrong token every 11
        for (int maxDraft : {3, 8}) {
            auto sink = std::make_shared<TokenCollector>();
            GenerationRequest r = greedyRequest(prompt, sink, 90);
            r.prediction = edited;
            r.specMaxDraft = maxDraft;
            QVERIFY((*e)->submit(std::move(r)).isOk());
            QVERIFY(sink->waitDone());
            QVERIFY2(sink->error.isOk(), sink->error.toString().c_str());
            qInfo("max %d drafts: %d of %d accepted", maxDraft, sink->usage.acceptedDraftTokens, sink->usage.draftTokens);
            QCOMPARE(sink->tokens(), plain->tokens());
            QVERIFY(sink->usage.acceptedDraftTokens > 30);
            QVERIFY(sink->usage.draftTokens > sink->usage.acceptedDraftTokens);
        }
        // Four streams at once, each drafting; then every slot and block is back.
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 4; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            GenerationRequest r = greedyRequest(prompt, sinks.back(), 90);
            r.prediction = edited;
            QVERIFY((*e)->submit(std::move(r)).isOk());
        }
        for (auto& s : sinks) {
            QVERIFY(s->waitDone());
            QCOMPARE(s->tokens(), plain->tokens());
        }
        QTRY_COMPARE((*e)->stats().stateSlotsLive, 0);
        QTRY_COMPARE((*e)->stats().kvBlocksUsed, 0);
    }

    void stateBeyondMemoryIsRefused() {
        auto e = engine(true, 0, 100000000);
        QVERIFY(!e.isOk());
        QVERIFY2(e.status().message().find("recurrent state") != std::string::npos, e.status().toString().c_str());
    }
};

QTEST_GUILESS_MAIN(TestEngineHybrid)
#include "test_engine_hybrid.moc"
