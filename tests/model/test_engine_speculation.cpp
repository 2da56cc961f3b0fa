// Speculative decoding end to end on stories260K (F32, a trained model): with n-gram drafts or a
// prediction the tokens are exactly those of plain decoding — greedy, sampled with the same seed
// (each token is still one draw of the request's sampler), with stop strings, end-of-generation
// tokens, n > 1 forks, grammars and concurrent streams — drafts are accepted where they match,
// every KV block comes back, and bad speculation settings are refused at submit.
#include "hearth/devices.h"
#include "hearth/engine.h"
#include "hearth/grammar.h"
#include "engine_device_checks.h"
#include "test_support.h"
#include "token_collector.h"

#include <QtTest>

#include <limits>

using namespace hearth;

namespace {

using test::kStoriesPrompt;
using test::testDevice;
using test::TokenCollector;

struct Outcome {
    std::vector<std::vector<int32_t>> tokens; // per choice
    std::string text;
    FinishReason reason = FinishReason::Error;
    Usage usage;
};

// Runs `r` to the end (into a fresh collector) and returns what came out.
Outcome run(Engine& e, GenerationRequest r) {
    auto sink = std::make_shared<TokenCollector>();
    r.sink = sink;
    Outcome o;
    auto id = e.submit(std::move(r));
    if (!id.isOk()) {
        qWarning("submit: %s", id.status().toString().c_str());
        return o;
    }
    if (!sink->waitDone() || !sink->error.isOk()) {
        qWarning("request failed: %s", sink->error.toString().c_str());
        return o;
    }
    o.tokens = sink->choiceTokens;
    o.text = sink->text();
    o.reason = sink->reason;
    o.usage = sink->usage;
    return o;
}

// stories260K on the test device, with a small context and KV budget; speculation as given.
EngineConfig storiesConfig(SpeculationConfig speculation) {
    EngineConfig c;
    c.modelPath = hearth::test::testDataPath("models/stories260K.gguf");
    c.contextLength = 512;
    c.kvMemoryBytes = 8ull << 20;
    c.device = testDevice();
    c.speculation = std::move(speculation);
    return c;
}

// Every proposal verified: on a model this small the adaptive policy would rightly draft little
// (each token costs nearly a step), and these tests are about exactness.
SpeculationConfig fixedDrafts() {
    SpeculationConfig s;
    s.adaptive = false;
    return s;
}

GenerationRequest request(int maxTokens, float temperature = 0.0f, uint64_t seed = 0) {
    GenerationRequest r = test::greedyRequest(kStoriesPrompt, nullptr, maxTokens);
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    return r;
}

// The CPU computes a row the same whatever else is in its step (batch invariance), so sampled
// tokens are identical with and without drafts. A GPU's kernels for a drafted step may round
// differently from a one-token step's: greedy tokens still agree (no near-ties on this model),
// but a sampled draw may land on the other side of a boundary, so there only lengths are compared.
bool batchInvariant() { return testDevice() == "cpu"; }

GenerationRequest plain(GenerationRequest r) {
    r.specMaxDraft = 0;
    return r;
}

GenerationRequest predicted(GenerationRequest r, std::vector<int32_t> prediction) {
    r.prediction = std::move(prediction);
    return r;
}

} // namespace

class TestEngineSpeculation : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> m_engine; // n-gram drafting on for every request

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        if (testDevice() != "cpu" && !findDevice(listDevices(), testDevice()))
            QSKIP(qPrintable(QStringLiteral("no device %1 here").arg(QString::fromStdString(testDevice()))));
        SpeculationConfig spec = fixedDrafts();
        spec.ngram = true;
        auto e = Engine::create(storiesConfig(spec));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
        QVERIFY(m_engine->model().speculationUnavailable.empty());
    }

    void greedyIsUnchangedByDrafts() {
        const Outcome base = run(*m_engine, plain(request(300)));
        QCOMPARE(base.tokens.size(), size_t(1));
        QCOMPARE(base.tokens[0].size(), size_t(300));
        QCOMPARE(std::vector<int32_t>(base.tokens[0].begin(), base.tokens[0].begin() + 64), test::kStoriesGreedy);
        QCOMPARE(base.usage.draftTokens, 0);

        const Outcome ngram = run(*m_engine, request(300));
        QCOMPARE(ngram.tokens, base.tokens);

        // The prediction is the answer itself: drafts are accepted throughout.
        const Outcome self = run(*m_engine, predicted(request(300), base.tokens[0]));
        QCOMPARE(self.tokens, base.tokens);
        QCOMPARE(self.text, base.text);
        qInfo("prediction = answer: %d of %d drafts accepted (%d from the prediction)", self.usage.acceptedDraftTokens,
              self.usage.draftTokens, self.usage.predictionDraftTokens);
        QVERIFY(self.usage.acceptedPredictionTokens > 200);
        QCOMPARE(self.usage.acceptedPredictionTokens, self.usage.predictionDraftTokens); // F32: no near-ties here

        // An edited prediction (tokens replaced, inserted and deleted): still the same answer.
        std::vector<int32_t> edited = base.tokens[0];
        edited[40] = 5;
        edited.insert(edited.begin() + 100, {7, 8, 9});
        edited.erase(edited.begin() + 200, edited.begin() + 210);
        const Outcome edit = run(*m_engine, predicted(request(300), edited));
        QCOMPARE(edit.tokens, base.tokens);
        QVERIFY(edit.usage.acceptedPredictionTokens > 150);
        QVERIFY(edit.usage.predictionDraftTokens > edit.usage.acceptedPredictionTokens);

        // Short drafts per request, and none at all.
        GenerationRequest two = predicted(request(300), base.tokens[0]);
        two.specMaxDraft = 2;
        QCOMPARE(run(*m_engine, two).tokens, base.tokens);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
        QVERIFY(m_engine->stats().draftTokens > 0);
    }

    void laterRequestsDraftFromEarlierOnes() {
        // The shared n-gram pool: a request whose answer repeats an earlier one's drafts from the
        // first tokens on (the sequence's own n-grams have nothing to match yet).
        SpeculationConfig spec = fixedDrafts();
        spec.ngram = true;
        auto e = Engine::create(storiesConfig(spec)); // a fresh pool
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        const GenerationRequest r = request(60);
        const Outcome first = run(**e, r);
        const Outcome again = run(**e, r);
        QCOMPARE(again.tokens, first.tokens);
        qInfo("first %d of %d drafts accepted, again %d of %d", first.usage.acceptedDraftTokens, first.usage.draftTokens,
              again.usage.acceptedDraftTokens, again.usage.draftTokens);
        QVERIFY(again.usage.acceptedDraftTokens >= 40);
        QVERIFY(again.usage.acceptedDraftTokens > first.usage.acceptedDraftTokens + 20);
    }

    void sampledOutputIsTheSameDraws() {
        // One draw per emitted token either way: with the same seed the tokens are identical,
        // penalties (which depend on the tokens before) included.
        GenerationRequest r = request(200, 0.9f, 4242);
        r.sampling.topK = 40;
        r.sampling.repetitionPenalty = 1.1f;
        r.sampling.presencePenalty = 0.3f;
        const Outcome base = run(*m_engine, plain(r));
        QCOMPARE(base.tokens.size(), size_t(1));
        const Outcome spec = run(*m_engine, predicted(r, base.tokens[0]));
        QCOMPARE(spec.tokens.size(), base.tokens.size());
        QCOMPARE(spec.tokens[0].size(), base.tokens[0].size());
        if (!batchInvariant()) return;
        QCOMPARE(spec.tokens, base.tokens);
        QVERIFY(spec.usage.acceptedDraftTokens > 100);
    }

    void stopsEndTheOutputWhereTheyWould() {
        // An end-of-generation token among the accepted drafts ends the output there (the
        // newline, 13, stands for one: the greedy text reaches it at token 58).
        GenerationRequest r = request(200);
        r.ignoreEos = false;
        r.stopTokens = {13};
        const Outcome base = run(*m_engine, plain(r));
        QCOMPARE(base.reason, FinishReason::Stop);
        QCOMPARE(base.usage.completionTokens, 58);
        std::vector<int32_t> longer(test::kStoriesGreedy.begin(), test::kStoriesGreedy.end());
        const Outcome spec = run(*m_engine, predicted(r, longer));
        QCOMPARE(spec.tokens, base.tokens);
        QCOMPARE(spec.reason, FinishReason::Stop);
        QCOMPARE(spec.usage.completionTokens, base.usage.completionTokens);

        // A stop string inside the text: the output ends before it, as without drafts.
        GenerationRequest s = request(300);
        s.stopStrings = {"Lily was sad"};
        const Outcome stopBase = run(*m_engine, plain(s));
        const Outcome full = run(*m_engine, plain(request(300)));
        const Outcome stopSpec = run(*m_engine, predicted(s, full.tokens[0]));
        QCOMPARE(stopSpec.text, stopBase.text);
        QCOMPARE(stopSpec.tokens, stopBase.tokens);
        QCOMPARE(stopSpec.reason, FinishReason::Stop);
        // max_tokens is never passed, whatever was drafted.
        const Outcome cut = run(*m_engine, predicted(request(37), full.tokens[0]));
        QCOMPARE(cut.tokens[0], std::vector<int32_t>(full.tokens[0].begin(), full.tokens[0].begin() + 37));
        QCOMPARE(cut.reason, FinishReason::Length);
    }

    void forksGrammarsAndConcurrentStreams() {
        // n = 3 sampled choices, each with drafts: the same as without.
        GenerationRequest r = request(80, 1.0f, 77);
        r.n = 3;
        const Outcome base = run(*m_engine, plain(r));
        QCOMPARE(base.tokens.size(), size_t(3));
        const Outcome spec = run(*m_engine, predicted(r, base.tokens[1]));
        QCOMPARE(spec.tokens.size(), size_t(3));
        if (batchInvariant()) {
            QCOMPARE(spec.tokens, base.tokens);
            QVERIFY(spec.usage.acceptedDraftTokens > 0);
        }

        // A grammar: the sampler's mask follows the accepted drafts.
        auto g = grammar::parseGbnf("root ::= [a-z ]+ \".\"");
        QVERIFY(g.isOk());
        GenerationRequest gr = request(60);
        gr.grammar = *g;
        const Outcome gBase = run(*m_engine, plain(gr));
        QVERIFY(!gBase.tokens.empty());
        const Outcome gSpec = run(*m_engine, predicted(gr, gBase.tokens[0]));
        QCOMPARE(gSpec.tokens, gBase.tokens);
        QCOMPARE(gSpec.text, gBase.text);

        // Eight streams at once, half with predictions, half with n-grams only.
        const Outcome ref = run(*m_engine, plain(request(120)));
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 8; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            GenerationRequest q = i % 2 ? predicted(request(120), ref.tokens[0]) : request(120);
            q.sink = sinks.back();
            QVERIFY(m_engine->submit(std::move(q)).isOk());
        }
        for (auto& s : sinks) {
            QVERIFY(s->waitDone());
            QVERIFY2(s->error.isOk(), s->error.toString().c_str());
            QCOMPARE(s->tokens(), ref.tokens[0]);
        }
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }

    void syntheticAcceptanceDraftsEveryStep() {
        SpeculationConfig spec;
        spec.maxDraft = 4;
        spec.synthLength = 3.0;
        EngineConfig c = storiesConfig(spec);
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        const Outcome o = run(**e, request(300));
        QCOMPARE(o.tokens[0].size(), size_t(300));
        // Mean accepted length 3 of 4 drafts: about 2 accepted per step of 4 drafted.
        const double rate = double(o.usage.acceptedDraftTokens) / o.usage.draftTokens;
        qInfo("synthetic: %d of %d drafts accepted", o.usage.acceptedDraftTokens, o.usage.draftTokens);
        QVERIFY2(rate > 0.35 && rate < 0.65, qPrintable(QString::number(rate)));
        QTRY_COMPARE((*e)->stats().kvBlocksUsed, 0);
        c.speculation.synthLength = 9.0;
        QVERIFY(!Engine::create(c).isOk());
    }

    void draftModelDraftingForItselfAcceptsEveryDraft() {
        // stories260K drafting for itself: every greedy draft is the target's own choice, so all
        // are accepted (a check of the draft cache's catch-up and rollback and the bookkeeping).
        SpeculationConfig spec = fixedDrafts();
        spec.draft = true;
        spec.draftModel = hearth::test::testDataPath("models/stories260K.gguf");
        spec.maxDraft = 5;
        auto e = Engine::create(storiesConfig(spec));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        Engine& engine = **e;
        QCOMPARE(engine.model().draftModel, std::string("stories260K.gguf"));
        const Outcome base = run(*m_engine, plain(request(300)));
        const Outcome self = run(engine, request(300));
        QCOMPARE(self.tokens, base.tokens);
        qInfo("draft model: %d of %d drafts accepted", self.usage.acceptedDraftTokens, self.usage.draftTokens);
        QVERIFY(self.usage.draftTokens > 200);
        QCOMPARE(self.usage.acceptedDraftTokens, self.usage.draftTokens);
        QCOMPARE(self.usage.predictionDraftTokens, 0);
        // A prediction that departs from the answer: the draft model takes over where it fails.
        std::vector<int32_t> wrong(base.tokens[0].begin(), base.tokens[0].begin() + 50);
        wrong.insert(wrong.end(), 30, 7);
        const Outcome mixed = run(engine, predicted(request(300), wrong));
        QCOMPARE(mixed.tokens, base.tokens);
        QVERIFY(mixed.usage.predictionDraftTokens > 0);
        QVERIFY(mixed.usage.draftTokens > mixed.usage.predictionDraftTokens);

        // Sampled n = 3 choices and concurrent streams, each with its own draft cache.
        GenerationRequest r = request(80, 1.0f, 77);
        r.n = 3;
        const Outcome nBase = run(*m_engine, plain(r));
        const Outcome nSpec = run(engine, r);
        QCOMPARE(nSpec.tokens.size(), size_t(3));
        if (batchInvariant()) QCOMPARE(nSpec.tokens, nBase.tokens);
        std::vector<std::shared_ptr<TokenCollector>> sinks;
        for (int i = 0; i < 6; ++i) {
            sinks.push_back(std::make_shared<TokenCollector>());
            GenerationRequest q = request(100 + 20 * i);
            q.sink = sinks.back();
            QVERIFY(engine.submit(std::move(q)).isOk());
        }
        for (int i = 0; i < 6; ++i) {
            QVERIFY(sinks[size_t(i)]->waitDone());
            QCOMPARE(sinks[size_t(i)]->tokens(),
                     std::vector<int32_t>(base.tokens[0].begin(), base.tokens[0].begin() + 100 + 20 * i));
        }
        // Every block of both caches is back.
        QTRY_COMPARE(engine.stats().kvBlocksUsed, 0);
        QTRY_COMPARE(engine.stats().draftKvBlocksUsed, 0);
    }

    // With a least probability (llama.cpp's p_min) the draft model stops where it is unsure: the
    // same answer from fewer drafts, all still accepted; per request, and off with 0.
    void draftModelStopsWhereItIsUnsure() {
        SpeculationConfig spec = fixedDrafts();
        spec.draft = true;
        spec.draftModel = hearth::test::testDataPath("models/stories260K.gguf");
        spec.maxDraft = 5;
        spec.pMin = 0.9f;
        auto e = Engine::create(storiesConfig(spec));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        const Outcome base = run(*m_engine, plain(request(200)));
        const Outcome sure = run(**e, request(200));
        GenerationRequest all = request(200);
        all.specPMin = 0.0f;
        const Outcome every = run(**e, all);
        QCOMPARE(sure.tokens, base.tokens);
        QCOMPARE(every.tokens, base.tokens);
        qInfo("p_min 0.9: %d drafts; 0: %d", sure.usage.draftTokens, every.usage.draftTokens);
        QVERIFY(sure.usage.draftTokens > 0);
        QVERIFY(sure.usage.draftTokens < every.usage.draftTokens);
        QCOMPARE(sure.usage.acceptedDraftTokens, sure.usage.draftTokens);
        QTRY_COMPARE((*e)->stats().draftKvBlocksUsed, 0);
    }

    void incompatibleDraftModelsAreRefused() {
        SpeculationConfig spec;
        spec.draftModel = hearth::test::testDataPath("models/llama-2-tiny-random.gguf");
        EngineConfig c = storiesConfig(spec);
        auto e = Engine::create(c);
        QVERIFY(!e.isOk());
        QCOMPARE(e.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(e.status().message().find("vocabulary") != std::string::npos, e.status().message().c_str());
        c.speculation.draftModel = "/nonexistent/draft.gguf";
        QVERIFY(!Engine::create(c).isOk());
        c.speculation.draftModel.clear();
        c.speculation.draft = true; // 'draft' without a file
        QCOMPARE(Engine::create(c).status().code(), ErrorCode::InvalidArgument);
    }

    // checkDraftModel makes the same checks from the files' metadata (what the app's draft picker
    // lists by), with the same reasons.
    void draftChecksFromMetadataAgreeWithTheLoad() {
        const std::string stories = hearth::test::testDataPath("models/stories260K.gguf");
        const std::string tiny = hearth::test::testDataPath("models/llama-2-tiny-random.gguf");
        QVERIFY(checkDraftModel(stories, stories).isOk());
        QVERIFY(checkDraftModel(stories, stories, 256).isOk());
        const Status other = checkDraftModel(stories, tiny);
        QCOMPARE(other.code(), ErrorCode::InvalidArgument);
        QVERIFY2(other.message().find("vocabulary") != std::string::npos, other.message().c_str());
        QVERIFY2(other.message().find("llama-2-tiny-random.gguf") != std::string::npos, other.message().c_str());
        QVERIFY(!checkDraftModel(stories, "/nonexistent/draft.gguf").isOk());
        QVERIFY(!checkDraftModel("/nonexistent/model.gguf", stories).isOk());
        // One checker for many candidates: the same answers.
        auto checker = DraftChecker::open(stories);
        QVERIFY2(checker.isOk(), checker.status().toString().c_str());
        QVERIFY(checker->check(stories, 256).isOk());
        QCOMPARE(checker->check(tiny).toString(), other.toString());
        QVERIFY(!checker->check("/nonexistent/draft.gguf").isOk());
        QVERIFY(!DraftChecker::open("/nonexistent/model.gguf").isOk());
    }

    void badSettingsAreRefused() {
        GenerationRequest r = request(10);
        r.sink = std::make_shared<TokenCollector>();
        r.prediction = {1, 2, 99999};
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.prediction.assign(513, 5); // longer than the context
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.prediction.clear();
        r.specMaxDraft = 65;
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.specMaxDraft = -2;
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.specMaxDraft = -1;
        r.specPMin = 1.5f;
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        r.specPMin = std::numeric_limits<float>::quiet_NaN();
        QCOMPARE(m_engine->submit(r).status().code(), ErrorCode::InvalidArgument);
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }
};

QTEST_MAIN(TestEngineSpeculation)
#include "test_engine_speculation.moc"
