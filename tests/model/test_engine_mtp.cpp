// Multi-token prediction (qwen35's nextn layer as the drafter): its drafts against llama.cpp's
// draft-mtp on the same file, greedy output unchanged by it in the engine (with the prefix cache,
// concurrent streams, the experts model), and files or settings that cannot have it refused.
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/synth.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "runtime/mtp_drafter.h"
#include "sample/sampler.h"
#include "test_support.h"
#include "token_collector.h"

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

using namespace hearth;

namespace {

// The prompt, and what llama.cpp v0.5.0 gives on qwen35-tiny (F32, seed 42, the qwen2
// vocabulary): greedy tokens, and its draft-mtp drafts before each step, from
//   llama-server -m FILE --spec-type draft-mtp --spec-draft-p-min 0 --spec-draft-n-max 3 --verbose
// (the "draft candidate 0" lines) with a /completion of these ids, temperature 0.
const std::vector<int32_t> kPrompt = {9707, 1052, 11, 1246, 525, 498, 3351, 30, 358, 1079};
const std::vector<int32_t> kGreedy = {42451, 64546,  71969,  27958, 73258,
                                      12762, 105465, 115034, 114032};
const std::vector<std::vector<int32_t>> kDrafts = {
    {88289, 63644, 77688}, {38204, 35254, 112608}, {35603, 125535, 125213},
    {87705, 93036, 20061}, {3202, 80961, 131485},  {130571, 19038, 62739},
    {12865, 9272, 140426}, {38555, 35683, 12313},  {4553, 41109, 142881}};

struct Outcome {
    std::vector<int32_t> tokens;
    Usage usage;
    bool ok = false;
};

Outcome generate(Engine& e, const std::vector<int32_t>& prompt, int n) {
    auto sink = std::make_shared<test::TokenCollector>();
    GenerationRequest r;
    r.prompt = prompt;
    r.maxTokens = n;
    r.sampling.temperature = 0.0f;
    r.sink = sink;
    Outcome o;
    auto id = e.submit(std::move(r));
    if (!id.isOk() || !sink->waitDone() || !sink->error.isOk()) return o;
    o.tokens = sink->choiceTokens.empty() ? std::vector<int32_t>{} : sink->choiceTokens[0];
    o.usage = sink->usage;
    o.ok = true;
    return o;
}

} // namespace

class TestEngineMtp : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_tiny, m_moe, m_tinyQ8; // F32 (as llama.cpp's drafts were recorded), Q8_0

    std::string synth(const char* preset, const std::string& vocab, const char* type = "F32") {
        SynthOptions o;
        o.preset = preset;
        o.typeOrMix = type;
        o.vocabPath = vocab;
        o.outPath = m_dir
                        .filePath(QString::fromLatin1(preset) + QStringLiteral("-") +
                                  QString::fromLatin1(type) + QStringLiteral(".gguf"))
                        .toStdString();
        o.threads = 2;
        const Status s = synthesizeModel(o);
        if (!s.isOk()) qWarning("synth %s: %s", preset, s.toString().c_str());
        return s.isOk() ? o.outPath : std::string();
    }

    // n deterministic values in [-1, 1]: stand-in hidden rows.
    static std::vector<float> patternRows(size_t n) {
        std::vector<float> rows(n);
        for (size_t i = 0; i < n; ++i) rows[i] = float((i * 7919) % 23) / 11.0f - 1.0f;
        return rows;
    }

    // The model on the CPU for one sequence of 256 positions (blocks 0-15, state slot 0).
    static Result<std::unique_ptr<runtime::ModelRunner>>
    cpuTarget(const model::Architecture& arch) {
        runtime::RunnerConfig rc;
        rc.blockSize = 16;
        rc.numBlocks = 16;
        rc.contextLength = 256;
        rc.stateSlots = 1;
        return runtime::ModelRunner::create(arch, rc);
    }

    // A model file, its architecture and its runner on the CPU (cpuTarget).
    struct CpuModel {
        gguf::File file;
        std::unique_ptr<model::Architecture> arch;
        std::unique_ptr<runtime::ModelRunner> runner;
    };
    static Result<CpuModel> openCpuModel(const std::string& path) {
        HEARTH_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(path));
        HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<model::Architecture> arch,
                                model::loadArchitecture(file));
        HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<runtime::ModelRunner> runner, cpuTarget(*arch));
        return CpuModel{std::move(file), std::move(arch), std::move(runner)};
    }

    // The bytes a runner's devices hold for its weights beyond the file's mapping.
    static uint64_t weightBytes(const runtime::ModelRunner& r) {
        uint64_t bytes = 0;
        for (const runtime::DeviceMemory& m : r.memory()) bytes += m.weightBytes;
        return bytes;
    }

    // A head of the file at path, alone, for that one sequence.
    static runtime::DraftModelConfig headConfig(const std::string& path) {
        runtime::DraftModelConfig dc;
        dc.path = path;
        dc.contextLength = 256;
        dc.maxNumSeqs = 1;
        return dc;
    }

    EngineConfig config(const std::string& path, bool mtp) {
        EngineConfig c;
        c.modelPath = path;
        c.contextLength = 256;
        c.kvMemoryBytes = 16ull << 20;
        c.threads = 2;
        c.device = test::testDevice();
        c.speculation.mtp = mtp;
        c.speculation.adaptive = false; // draft spec-max tokens every step
        c.speculation.maxDraft = 3;
        return c;
    }

    // The engine with the head against plain decoding (see greedyIsUnchangedByTheHead).
    void checkGreedy(const std::string& path) {
        const int n = test::testDevice() == "cpu" ? 24 : 8; // lavapipe: fewer tokens
        auto plainEngine = Engine::create(config(path, false));
        QVERIFY2(plainEngine.isOk(), plainEngine.status().toString().c_str());
        const Outcome plain = generate(**plainEngine, kPrompt, n);
        QVERIFY(plain.ok);
        QCOMPARE(int(plain.tokens.size()), n);

        auto e = Engine::create(config(path, true));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        QVERIFY((*e)->model().draftModel.find("multi-token prediction") != std::string::npos);
        const Outcome first = generate(**e, kPrompt, n);
        QVERIFY(first.ok);
        QCOMPARE(first.tokens, plain.tokens);
        QVERIFY2(first.usage.draftTokens >= 3 * (n - 4),
                 std::to_string(first.usage.draftTokens).c_str());
        // A prompt of two full K/V blocks and more, twice: the second time its first 32
        // tokens come from the prefix cache, and the head has no target rows for them.
        std::vector<int32_t> longPrompt;
        for (int k = 0; k < 4; ++k)
            longPrompt.insert(longPrompt.end(), kPrompt.begin(), kPrompt.end());
        const Outcome longPlain = generate(**plainEngine, longPrompt, n);
        const Outcome once = generate(**e, longPrompt, n);
        const Outcome again = generate(**e, longPrompt, n);
        QCOMPARE(once.tokens, longPlain.tokens);
        QCOMPARE(again.tokens, longPlain.tokens);
        QCOMPARE(again.usage.cachedPromptTokens, 32);
        QVERIFY(again.usage.draftTokens > 0);

        std::vector<std::shared_ptr<test::TokenCollector>> sinks;
        const int streams = test::testDevice() == "cpu" ? 4 : 2;
        for (int s = 0; s < streams; ++s) {
            auto sink = std::make_shared<test::TokenCollector>();
            GenerationRequest r;
            r.prompt = kPrompt;
            r.prompt.push_back(1000 + s);
            r.maxTokens = n / 2;
            r.sampling.temperature = 0.0f;
            r.sink = sink;
            QVERIFY((*e)->submit(std::move(r)).isOk());
            sinks.push_back(sink);
        }
        for (int s = 0; s < streams; ++s) {
            QVERIFY(sinks[size_t(s)]->waitDone());
            std::vector<int32_t> prompt = kPrompt;
            prompt.push_back(1000 + s);
            const Outcome alone = generate(**plainEngine, prompt, n / 2);
            QCOMPARE(sinks[size_t(s)]->choiceTokens.at(0), alone.tokens);
        }
        const EngineStats st = (*e)->stats();
        QCOMPARE(st.draftKvBlocksUsed, 0);
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-qwen2.gguf"));
        const std::string vocab =
            test::testDataPath(QStringLiteral("models/ggml-vocab-qwen2.gguf"));
        m_tiny = synth("qwen35-tiny", vocab);
        m_moe = synth("qwen35moe-tiny", vocab);
        m_tinyQ8 = synth("qwen35-tiny", vocab, "Q8_0");
        QVERIFY(!m_tiny.empty() && !m_moe.empty() && !m_tinyQ8.empty());
    }

    // The head itself, step by step as the engine drives it: the target computes the sequence's
    // new rows (their hidden rows observed), rows of three rejected drafts are observed after
    // them and replaced by the next step's, and each draft equals llama.cpp's.
    void draftsAreLlamaCppDrafts() {
        auto tgt = openCpuModel(m_tiny);
        QVERIFY2(tgt.isOk(), tgt.status().toString().c_str());
        runtime::DraftModelConfig dc = headConfig(m_tiny);
        auto head = runtime::MtpDrafter::open(dc);
        QVERIFY2(head.isOk(), head.status().toString().c_str());
        QVERIFY((*head)->wantsHidden());

        std::vector<int32_t> table(16);
        for (int i = 0; i < 16; ++i) table[size_t(i)] = i;
        const int64_t E = tgt->arch->dims().nEmbd, V = tgt->arch->dims().nVocab;
        std::vector<int32_t> tokens = kPrompt;
        std::vector<float> logits, hidden;
        int computed = 0;
        for (size_t round = 0; round < kDrafts.size(); ++round) {
            graph::Batch b;
            b.blockTables.emplace_back(table);
            b.states.push_back({computed == 0 ? -1 : 0, 0, {}});
            for (int p = computed; p < int(tokens.size()); ++p) {
                graph::BatchToken t{tokens[size_t(p)], p, 0, p + 1 == int(tokens.size())};
                t.wantHidden = true;
                b.tokens.push_back(t);
            }
            QVERIFY(tgt->runner->forward(b, logits, &hidden).isOk());
            QCOMPARE(int64_t(hidden.size()), int64_t(b.tokens.size()) * E);
            (*head)->observe(7, computed, hidden);
            const int32_t next =
                sample::argmaxFirst(std::span<const float>(logits.data(), size_t(V)));
            QCOMPARE(next, kGreedy[round]);
            computed = int(tokens.size());
            tokens.push_back(next);
            // Drafted positions the target computed and rejected (their rows come back later).
            std::vector<float> junk(size_t(3 * E), 0.5f);
            (*head)->observe(7, computed, junk);
            std::vector<runtime::DraftJob> jobs{{7, tokens, 3, {}}};
            QVERIFY((*head)->draft(jobs).isOk());
            QCOMPARE(jobs[0].draft, kDrafts[round]);
            QCOMPARE((*head)->missingRows(), uint64_t(0));
            // Rows before the newest token are consumed; held are the three rows from it on (the
            // rejected drafts' rows, which the next step's rows replace).
            QCOMPARE((*head)->pendingRows(7), 3);
        }
        (*head)->release(7);
        QCOMPARE((*head)->numFreeBlocks(), (*head)->numBlocks());
    }

    // Beside its model the head uses the model's repacked output matrix (the same file mapping)
    // instead of a copy of its own, and drafts the same.
    void headSharesTheModelsWeightCopies() {
        auto tgt = openCpuModel(m_tinyQ8);
        QVERIFY2(tgt.isOk(), tgt.status().toString().c_str());
        if (weightBytes(*tgt->runner) == 0)
            QSKIP(
                "the CPU kernels at this ISA level keep Q8_0 weights in place (nothing to share)");

        runtime::DraftModelConfig dc = headConfig(m_tinyQ8);
        auto alone = runtime::MtpDrafter::open(dc);
        QVERIFY2(alone.isOk(), alone.status().toString().c_str());
        dc.target = tgt->runner.get();
        dc.targetFile = &tgt->file;
        auto shared = runtime::MtpDrafter::open(dc);
        QVERIFY2(shared.isOk(), shared.status().toString().c_str());
        // The output matrix (151936 x 256) is most of what the head alone copies.
        const uint64_t output = 151936ull * 256 * 34 / 32;
        QVERIFY2((*alone)->weightBytes() >= output,
                 std::to_string((*alone)->weightBytes()).c_str());
        QVERIFY2((*shared)->weightBytes() + output <= (*alone)->weightBytes(),
                 std::to_string((*shared)->weightBytes()).c_str());

        const int64_t E = tgt->arch->dims().nEmbd;
        const std::vector<float> rows = patternRows(size_t(11 * E));
        std::vector<int32_t> tokens = kPrompt;
        tokens.push_back(kGreedy[0]);
        std::vector<std::vector<int32_t>> drafts;
        for (auto* head : {alone->get(), shared->get()}) {
            head->observe(1, 0, rows);
            std::vector<runtime::DraftJob> jobs{{1, tokens, 4, {}}};
            QVERIFY(head->draft(jobs).isOk());
            QCOMPARE(int(jobs[0].draft.size()), 4);
            drafts.push_back(jobs[0].draft);
        }
        QCOMPARE(drafts[1], drafts[0]);
    }

    // A head drafting from a shortlist (the first ids) gives exactly the first logits of the
    // whole head, reads its rows of the model's repacked output in place (no copy), and still
    // takes every token of the vocabulary as input.
    void shortlistIsTheFirstLogitsOfTheWholeHead() {
        auto tgt = openCpuModel(m_tinyQ8);
        QVERIFY2(tgt.isOk(), tgt.status().toString().c_str());
        auto whole = model::loadMtpHead(tgt->file, 0);
        auto shortlist = model::loadMtpHead(tgt->file, 1000); // rounded up to 1024
        auto everything = model::loadMtpHead(tgt->file, 1 << 20);
        QVERIFY(whole.isOk() && shortlist.isOk() && everything.isOk());
        const int V = (*whole)->dims().nVocab, K = 1024;
        QCOMPARE((*shortlist)->dims().nVocab, V);
        QCOMPARE((*shortlist)->dims().logitWidth(), K);
        QCOMPARE((*whole)->dims().logitWidth(), V);
        QCOMPARE((*everything)->dims().logitWidth(), V);

        auto runner = [&](const model::Architecture& head, bool share) {
            runtime::RunnerConfig rc;
            rc.blockSize = 16;
            rc.numBlocks = 4;
            rc.contextLength = 64;
            if (share) rc.shareWeights = tgt->runner.get();
            return runtime::ModelRunner::create(head, rc);
        };
        auto alone = runner(**whole, false);
        auto shared = runner(**shortlist, true);
        QVERIFY2(alone.isOk() && shared.isOk(),
                 (alone.isOk() ? shared : alone).status().toString().c_str());
        // Its own copies are the layer's matrices only, as for the whole head beside its model:
        // the shortlist's rows are read from the model's copy.
        auto wholeShared = runner(**whole, true);
        QVERIFY(wholeShared.isOk());
        QCOMPARE(weightBytes(**shared), weightBytes(**wholeShared));
        if (weightBytes(*tgt->runner) > 0)
            QVERIFY(weightBytes(**alone) > weightBytes(**shared) + uint64_t(V) * 256);

        const int64_t E = (*whole)->dims().nEmbd;
        const std::vector<int32_t> tokens = {9707, 150000, 11, 151935}; // two beyond the shortlist
        const std::vector<int32_t> table = {0, 1};
        const std::vector<float> hidden = patternRows(tokens.size() * size_t(E));
        graph::Batch b;
        b.blockTables.emplace_back(table);
        for (int p = 0; p < int(tokens.size()); ++p)
            b.tokens.push_back({tokens[size_t(p)], p, 0, true});
        b.hiddenIn = hidden;
        b.hiddenWidth = E;
        std::vector<float> all, first;
        QVERIFY((*alone)->forward(b, all).isOk());
        const Status s = (*shared)->forward(b, first);
        QVERIFY2(s.isOk(), s.toString().c_str());
        QCOMPARE(all.size(), tokens.size() * size_t(V));
        QCOMPARE(first.size(), tokens.size() * size_t(K));
        for (size_t r = 0; r < tokens.size(); ++r)
            for (int t = 0; t < K; ++t)
                QCOMPARE(first[r * size_t(K) + size_t(t)], all[r * size_t(V) + size_t(t)]);

        // As a drafter: every draft is a shortlisted id.
        runtime::DraftModelConfig dc = headConfig(m_tinyQ8);
        dc.shortlist = 1000;
        auto head = runtime::MtpDrafter::open(dc);
        QVERIFY2(head.isOk(), head.status().toString().c_str());
        std::vector<int32_t> seq = kPrompt;
        (*head)->observe(1, 0, std::vector<float>(seq.size() * size_t(E), 0.25f));
        std::vector<runtime::DraftJob> jobs{{1, seq, 4, {}}};
        QVERIFY((*head)->draft(jobs).isOk());
        QCOMPARE(int(jobs[0].draft.size()), 4);
        for (int32_t t : jobs[0].draft) QVERIFY2(t >= 0 && t < K, std::to_string(t).c_str());
    }

    // With a least probability the head stops at the first token below it: the drafts are the
    // first ones it makes without one, up to there, each with its probability.
    void headStopsBelowItsLeastProbability() {
        runtime::DraftModelConfig dc = headConfig(m_tiny);
        auto head = runtime::MtpDrafter::open(dc);
        QVERIFY2(head.isOk(), head.status().toString().c_str());
        const int64_t E = 256;
        const std::vector<float> rows = patternRows(kPrompt.size() * size_t(E));
        uint64_t seq = 1;
        auto draft = [&](float pMin) {
            (*head)->observe(seq, 0, rows);
            std::vector<runtime::DraftJob> jobs{{seq, kPrompt, 4, {}, pMin, {}}};
            const Status s = (*head)->draft(jobs);
            if (!s.isOk()) qWarning("%s", s.toString().c_str());
            (*head)->release(seq++);
            return jobs[0];
        };
        const runtime::DraftJob all = draft(1e-30f);
        QCOMPARE(int(all.draft.size()), 4);
        QCOMPARE(all.confidence.size(), all.draft.size());
        for (float p : all.confidence) QVERIFY2(p > 0.0f && p <= 1.0f, std::to_string(p).c_str());
        QCOMPARE(draft(0.0f).draft, all.draft);
        QVERIFY(draft(0.0f).confidence.empty());
        QVERIFY(draft(1.0f).draft.empty());
        // A threshold just above the least of drafts 1-3 cuts there (or before).
        const float cut =
            *std::min_element(all.confidence.begin() + 1, all.confidence.end()) * 1.0001f;
        size_t expect = 0;
        while (expect < all.draft.size() && all.confidence[expect] >= cut) ++expect;
        QVERIFY(expect < 4);
        const runtime::DraftJob some = draft(cut);
        QCOMPARE(some.draft, std::vector<int32_t>(all.draft.begin(),
                                                  all.draft.begin() + std::ptrdiff_t(expect)));
        QCOMPARE(some.confidence,
                 std::vector<float>(all.confidence.begin(),
                                    all.confidence.begin() + std::ptrdiff_t(expect)));
        QCOMPARE((*head)->numFreeBlocks(), (*head)->numBlocks());
    }

    // In the engine: the same tokens as plain decoding with drafts made (and rejected) every
    // step, again from the prefix cache (its rows not recomputed: drafts from zeros there), and
    // for four streams at once; every K/V block comes back.
    // On the CPU the F32 file (batched and one-token steps give the same bits); on lavapipe the
    // Q8_0 one, a quarter of the bytes to upload.
    void greedyIsUnchangedByTheHead() {
        checkGreedy(test::testDevice() == "cpu" ? m_tiny : m_tinyQ8);
    }
    void greedyIsUnchangedByTheExpertsModelsHead() {
        if (test::testDevice() != "cpu")
            QSKIP("on the CPU only (lavapipe: the dense model's function covers the head)");
        checkGreedy(m_moe);
    }

    // A prompt of 600 tokens computed in chunks of 128 (the head catches up on each part as it
    // goes, holding a bounded number of the target's rows): the output is unchanged, and the
    // head drafts after it.
    void longPromptInChunks() {
        const std::string path = test::testDevice() == "cpu" ? m_tiny : m_tinyQ8;
        std::vector<int32_t> prompt;
        for (int i = 0; i < 600; ++i) prompt.push_back(kPrompt[size_t(i) % kPrompt.size()] + i % 7);
        EngineConfig c = config(path, false);
        c.contextLength = 1024;
        c.maxBatchedTokens = 128;
        auto plainEngine = Engine::create(c);
        QVERIFY2(plainEngine.isOk(), plainEngine.status().toString().c_str());
        const Outcome plain = generate(**plainEngine, prompt, 8);
        QVERIFY(plain.ok);
        c.speculation.mtp = true;
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        const Outcome spec = generate(**e, prompt, 8);
        QVERIFY(spec.ok);
        QCOMPARE(spec.tokens, plain.tokens);
        QVERIFY(spec.usage.draftTokens > 0);
    }

    void filesAndSettingsWithoutAHeadAreRefused() {
        // A model without nextn layers (stories260K: llama).
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string stories = test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        EngineConfig c = config(stories, true);
        auto e = Engine::create(c);
        QVERIFY(!e.isOk());
        QVERIFY2(e.status().message().find("multi-token-prediction") != std::string::npos,
                 e.status().toString().c_str());
        // Both a draft model and the head.
        SpeculationConfig both;
        both.mtp = true;
        both.draftModel = stories;
        QVERIFY(!both.validate().isOk());
        SpeculationConfig shortlist;
        shortlist.mtpVocab = 100;
        QVERIFY(shortlist.validate().message().find("mtp-vocab") != std::string::npos);
        shortlist.mtpVocab = 0;
        QVERIFY(shortlist.validate().isOk());
        SpeculationConfig parsed;
        QVERIFY(parseSpecTypes("ngram,mtp", parsed).isOk());
        QVERIFY(parsed.mtp && parsed.ngram && !parsed.draft);
        QVERIFY(!parseSpecTypes("mtp,bogus", parsed).isOk());
    }
};

QTEST_MAIN(TestEngineMtp)
#include "test_engine_mtp.moc"
