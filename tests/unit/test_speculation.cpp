// Speculative decoding without a model: the scheduler's drafted steps and their rollback (exact
// block ids), the KV truncation's free-queue order, the n-gram and prediction drafters, the
// draft-length policy, synthetic acceptance rates, and the verification rule's output
// distribution (a chi-square test, with accepting every draft as the negative control).
#include "kv/kv_cache_manager.h"
#include "sample/sampler.h"
#include "kv/state_cache.h"
#include "sched/scheduler.h"
#include "sched_request.h"
#include "spec/draft_policy.h"
#include "spec/ngram_drafter.h"
#include "spec/ngram_pool.h"
#include "spec/prediction_drafter.h"
#include "spec/speculator.h"

#include <QtTest>

#include <cmath>
#include <vector>

using namespace hearth;
using namespace hearth::sched;
using hearth::kv::BlockId;
using hearth::kv::KvCacheManager;
using hearth::test::makeRequest;

namespace {

std::vector<BlockId> blocksOf(const KvCacheManager& c, RequestId id) {
    auto t = c.blockTable(id);
    return {t.begin(), t.end()};
}

// Chi-square statistic of observed counts against probabilities p (n draws).
double chiSquareOf(const std::vector<int>& observed, const std::vector<double>& p, int n) {
    double x = 0.0;
    for (size_t i = 0; i < p.size(); ++i) {
        const double e = p[i] * n;
        if (e > 0.0) x += (observed[i] - e) * (observed[i] - e) / e;
    }
    return x;
}

} // namespace

class TestSpeculation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void truncateFreesTrailingBlocksToTheQueueHead() {
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4});
        QVERIFY(cache.allocateSlots(1, 13)); // blocks 0..3
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1, 2, 3}));
        cache.truncate(1, 6); // two blocks hold 6 tokens
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        // The cut blocks are allocated next, in table order, before the never-used ones.
        QCOMPARE(cache.pool().freeQueue(), (std::vector<BlockId>{2, 3, 4, 5, 6, 7}));
        QCOMPARE(cache.numFreeBlocks(), 6);
        cache.truncate(1, 8); // nothing to cut
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        // Hashed (full, computed) blocks are never cut.
        std::vector<int32_t> tokens(8, 5);
        cache.cacheComputedBlocks(1, tokens, 8);
        cache.truncate(1, 0);
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        cache.free(1);
        QCOMPARE(cache.numFreeBlocks(), 8);
    }

    void draftedStepRollsBackRejectedTokens() {
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 3, 20, 100)).isOk());
        SchedulerOutput prefill = s.schedule();
        QVERIFY(!s.setDraft(1, {7, 8})); // still waiting for its prompt
        const int32_t first = 50;
        s.update(prefill, std::span<const int32_t>(&first, 1));
        QVERIFY(s.decoding(1));
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0}));
        // Token 50 (position 3) and four drafts at positions 4..7: two blocks.
        QVERIFY(s.setDraft(1, {51, 52, 53, 54}));
        SchedulerOutput step = s.schedule();
        QCOMPARE(step.seqs.size(), size_t(1));
        QCOMPARE(step.seqs[0].start, 3);
        QCOMPARE(step.seqs[0].numTokens, 5);
        QVERIFY(step.seqs[0].samples);
        QCOMPARE(step.seqs[0].drafts, (std::vector<int32_t>{51, 52, 53, 54}));
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        // The target agrees with 51 and then draws 60: 51 is kept, 52..54 rolled back.
        const std::vector<int32_t> sampled{51, 60};
        const std::vector<int> counts{2};
        QVERIFY(s.update(step, sampled, counts).empty());
        const Request* r = s.request(1);
        QCOMPARE(r->tokens, (std::vector<int32_t>{100, 101, 102, 50, 51, 60}));
        QCOMPARE(r->numComputed, 5); // positions 0..4 hold K/V; 60 is computed next
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        // All four drafts rejected from a block boundary: the block they alone used is freed.
        QVERIFY(s.setDraft(1, {61, 62, 63, 64}));
        SchedulerOutput step2 = s.schedule();
        QCOMPARE(step2.seqs[0].numTokens, 5);
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1, 2}));
        const int32_t other = 70;
        QVERIFY(s.update(step2, std::span<const int32_t>(&other, 1), std::vector<int>{1}).empty());
        QCOMPARE(s.request(1)->numComputed, 6);
        QCOMPARE(blocksOf(cache, 1), (std::vector<BlockId>{0, 1}));
        QCOMPARE(cache.pool().freeQueue().front(), 2);
        QVERIFY(s.cancel(1));
        QCOMPARE(cache.numFreeBlocks(), 8);
    }

    void hybridDraftsKeepTheStateOfEachPosition() {
        // Slots: the live one, then one per draft position; a partial acceptance copies the
        // state after the last accepted token into the live slot before the next step.
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4});
        kv::StateCache states({.numSlots = 8, .prefixCaching = false});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache, &states);
        QVERIFY(s.addRequest(makeRequest(1, 3, 20, 100)).isOk());
        SchedulerOutput prefill = s.schedule();
        QCOMPARE(prefill.seqs[0].stateWrite, 0);
        const int32_t first = 50;
        s.update(prefill, std::span<const int32_t>(&first, 1));
        QVERIFY(s.setDraft(1, {51, 52, 53}));
        SchedulerOutput step = s.schedule();
        QCOMPARE(step.seqs[0].drafts.size(), size_t(3));
        QCOMPARE(step.seqs[0].draftStates, (std::vector<int32_t>{1, 2, 3}));
        QCOMPARE(states.numScratch(), 3);
        // 51 accepted, then 60: the state after 51 (slot 2: after start + 1 + 1 tokens) resumes.
        s.update(step, std::vector<int32_t>{51, 60}, std::vector<int>{2});
        QCOMPARE(states.numScratch(), 0);
        SchedulerOutput next = s.schedule();
        QCOMPARE(next.stateCopies, (std::vector<std::pair<int32_t, int32_t>>{{2, 0}}));
        QCOMPARE(next.seqs[0].start, 5);
        QCOMPARE(next.seqs[0].stateRead, 0);
        s.update(next, std::vector<int32_t>{61});
        // All accepted: the live slot already holds the state; nothing to copy.
        QVERIFY(s.setDraft(1, {62, 63}));
        SchedulerOutput all = s.schedule();
        s.update(all, std::vector<int32_t>{62, 63, 64}, std::vector<int>{3});
        QVERIFY(s.schedule().stateCopies.empty());
        QVERIFY(s.cancel(1));
        QCOMPARE(states.numFree(), 8);
        // No slot to spare: the drafts are cut to the slots there are.
        kv::StateCache tight({.numSlots = 2, .prefixCaching = false});
        KvCacheManager cache2({.numBlocks = 8, .blockSize = 4});
        Scheduler t({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache2, &tight);
        QVERIFY(t.addRequest(makeRequest(1, 3, 20, 100)).isOk());
        SchedulerOutput p2 = t.schedule();
        t.update(p2, std::span<const int32_t>(&first, 1));
        QVERIFY(t.setDraft(1, {51, 52, 53}));
        SchedulerOutput cut = t.schedule();
        QCOMPARE(cut.seqs[0].drafts, std::vector<int32_t>{51});
        QCOMPARE(cut.seqs[0].numTokens, 2);
        t.abandon(cut);
        QCOMPARE(tight.numScratch(), 0);
    }

    void acceptanceIsCheckedAgainstTheDrafts() {
        // Tokens claimed accepted that differ from the drafts are not: only the first counts.
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 2, 20, 100)).isOk());
        SchedulerOutput prefill = s.schedule();
        const int32_t first = 9;
        s.update(prefill, std::span<const int32_t>(&first, 1));
        QVERIFY(s.setDraft(1, {1, 2, 3}));
        SchedulerOutput step = s.schedule();
        s.update(step, std::vector<int32_t>{4, 5, 6, 7}, std::vector<int>{4});
        QCOMPARE(s.request(1)->tokens, (std::vector<int32_t>{100, 101, 9, 4}));
        QCOMPARE(s.request(1)->numComputed, 3);
    }

    void stopTokenAmongAcceptedDraftsEndsTheRequest() {
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        Request req = makeRequest(1, 2, 20, 100);
        req.stopTokens = {2};
        QVERIFY(s.addRequest(std::move(req)).isOk());
        SchedulerOutput prefill = s.schedule();
        const int32_t first = 9;
        s.update(prefill, std::span<const int32_t>(&first, 1));
        QVERIFY(s.setDraft(1, {1, 2, 3}));
        SchedulerOutput step = s.schedule();
        const std::vector<RequestId> done = s.update(step, std::vector<int32_t>{1, 2, 3, 4}, std::vector<int>{4});
        QCOMPARE(done, std::vector<RequestId>{1});
        QCOMPARE(s.request(1)->tokens, (std::vector<int32_t>{100, 101, 9, 1, 2}));
        QCOMPARE(s.request(1)->finish, sched::FinishReason::Stop);
        QCOMPARE(cache.numFreeBlocks(), 8);
    }

    void draftsNeverPassMaxTokensOrTheBudget() {
        KvCacheManager cache({.numBlocks = 16, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 4, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 2, 4, 100)).isOk());
        SchedulerOutput prefill = s.schedule();
        const int32_t first = 9;
        s.update(prefill, std::span<const int32_t>(&first, 1));
        // 1 generated, max 4: at most 2 drafts (2 accepted + 1 sampled = 4).
        QVERIFY(s.setDraft(1, {1, 2, 3, 4, 5, 6}));
        SchedulerOutput step = s.schedule();
        QCOMPARE(step.seqs[0].drafts.size(), size_t(2));
        QCOMPARE(step.seqs[0].numTokens, 3);
        const std::vector<RequestId> done = s.update(step, std::vector<int32_t>{1, 2, 7}, std::vector<int>{3});
        QCOMPARE(done, std::vector<RequestId>{1});
        QCOMPARE(s.request(1)->finish, sched::FinishReason::Length);
        QCOMPARE(s.request(1)->numGenerated(), 4);
        // The step's token budget bounds drafts too.
        QVERIFY(s.addRequest(makeRequest(2, 2, 40, 100)).isOk());
        SchedulerOutput p2 = s.schedule();
        s.update(p2, std::span<const int32_t>(&first, 1));
        QVERIFY(s.setDraft(2, {1, 2, 3, 4, 5, 6}));
        QCOMPARE(s.schedule().seqs[0].numTokens, 4);
    }

    void ngramDrafterProposesWhatFollowedTheLastOccurrence() {
        spec::NgramDrafter d(2, 3);
        std::vector<int32_t> out;
        // ... 5 6 7 8 9 ... 5 6 7 -> 8 9 (3-gram), then the text after.
        const std::vector<int32_t> tokens{1, 5, 6, 7, 8, 9, 2, 3, 5, 6, 7};
        d.propose(tokens, 4, 3, out);
        QCOMPARE(out, (std::vector<int32_t>{8, 9, 2}));
        // The most recent occurrence wins.
        out.clear();
        d.propose(std::vector<int32_t>{4, 4, 1, 4, 4, 2, 4, 4}, 0, 2, out);
        QCOMPARE(out, (std::vector<int32_t>{2, 4}));
        // No repeated n-gram: nothing.
        out.clear();
        d.propose(std::vector<int32_t>{1, 2, 3, 4, 5}, 0, 4, out);
        QVERIFY(out.empty());
        QCOMPARE(spec::findLast(std::vector<int32_t>{1, 2, 1, 2}, std::vector<int32_t>{1, 2}, 2), int64_t(0));
        QCOMPARE(spec::findLast(std::vector<int32_t>{1, 2, 1, 2}, std::vector<int32_t>{1, 2}, 0), int64_t(-1));
    }

    void ngramPoolDraftsWhatEarlierTextContinuedWith() {
        spec::NgramPool pool(4096);
        std::vector<int32_t> out;
        pool.propose(std::vector<int32_t>{1, 2, 3, 4}, 4, out);
        QVERIFY(out.empty()); // nothing seen yet
        pool.add(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
        pool.propose(std::vector<int32_t>{9, 9, 1, 2, 3, 4}, 4, out);
        QCOMPARE(out, (std::vector<int32_t>{5, 6, 7, 8}));
        out.clear();
        pool.propose(std::vector<int32_t>{1, 2, 3, 4}, 20, out); // at most the 8 kept
        QCOMPARE(out, (std::vector<int32_t>{5, 6, 7, 8, 9, 10, 11, 12}));
        out.clear();
        pool.propose(std::vector<int32_t>{10, 11, 12, 13}, 4, out); // near the end: what there was
        QCOMPARE(out, std::vector<int32_t>{14});
        // A later text with the same key replaces the continuation.
        pool.add(std::vector<int32_t>{1, 2, 3, 4, 40, 41});
        out.clear();
        pool.propose(std::vector<int32_t>{1, 2, 3, 4}, 4, out);
        QCOMPARE(out, (std::vector<int32_t>{40, 41}));
        // A key that shares a slot but not its tokens drafts nothing (in a table of 16, every
        // unseen key below lands on a used slot).
        spec::NgramPool tiny(16);
        std::vector<int32_t> text;
        for (int32_t t = 0; t < 200; ++t) text.push_back(t);
        tiny.add(text);
        QVERIFY(tiny.used() == 16);
        int drafted = 0;
        for (int32_t t = 1000; t < 1300; ++t) {
            out.clear();
            tiny.propose(std::vector<int32_t>{t, t + 1, t + 2, t + 3}, 4, out);
            drafted += int(out.size());
        }
        QCOMPARE(drafted, 0);
    }

    void predictionDrafterFollowsAndRejoinsThePrediction() {
        spec::PredictionDrafter d({10, 11, 12, 13, 14, 15, 16, 17});
        std::vector<int32_t> out;
        const std::vector<int32_t> prompt{1, 2, 3};
        d.propose(prompt, 3, 3, out); // nothing generated yet: the prediction's start
        QCOMPARE(out, (std::vector<int32_t>{10, 11, 12}));
        out.clear();
        d.propose(std::vector<int32_t>{1, 2, 3, 10, 11}, 3, 3, out);
        QCOMPARE(out, (std::vector<int32_t>{12, 13, 14}));
        // The output departs (an insertion: 99), then rejoins at 13.
        out.clear();
        d.propose(std::vector<int32_t>{1, 2, 3, 10, 11, 12, 99}, 3, 2, out);
        QVERIFY(out.empty());
        out.clear();
        d.propose(std::vector<int32_t>{1, 2, 3, 10, 11, 12, 99, 13}, 3, 2, out);
        QCOMPARE(out, (std::vector<int32_t>{14, 15}));
        // At its end: nothing more to propose.
        out.clear();
        d.propose(std::vector<int32_t>{1, 16, 17}, 1, 2, out);
        QVERIFY(out.empty());
    }

    void draftLengthFollowsAcceptanceAndCost() {
        spec::DraftLength len(8, 1);
        const std::vector<double> cheap{1.0, 1.02, 1.04, 1.06, 1.08, 1.1, 1.12, 1.14, 1.16};
        const std::vector<double> dear{1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0};
        QCOMPARE(len.acceptance(), 0.5); // the prior
        QVERIFY(len.next(cheap, 0) > 0);
        QCOMPARE(len.next(dear, 0), 0); // each token half a step: no gain at acceptance 1/2
        for (int i = 0; i < 20; ++i) len.record(8, 8);
        QVERIFY(len.acceptance() > 0.9);
        QCOMPARE(len.next(cheap, 0), 8);
        // In a full batch the other sequences' tokens dilute the gain.
        QVERIFY(len.next(dear, 0) >= 1);
        QCOMPARE(len.next(dear, 15), 0);
        for (int i = 0; i < 20; ++i) len.record(4, 0);
        QVERIFY2(len.acceptance() < 0.2, qPrintable(QString::number(len.acceptance())));
        const std::vector<double> fair{1.0, 1.25, 1.5, 1.75, 2.0};
        QCOMPARE(len.next(fair, 0), 0);
        QVERIFY(len.next(cheap, 0) <= 2); // still worth a short draft where tokens are nearly free
        // Idle steps let the estimate drift back toward the prior, so drafting is tried again.
        for (int i = 0; i < 200; ++i) len.idle();
        QVERIFY(std::abs(len.acceptance() - 0.5) < 0.01);
        QVERIFY(len.next(fair, 0) > 0);
        spec::DraftLength atLeast4(8, 4);
        QCOMPARE(atLeast4.next(std::vector<double>{1.0, 1.3, 1.6, 1.9, 2.2}, 0), 0);
    }

    void synthAcceptanceGivesTheMeanLength() {
        auto rates = spec::synthAcceptance(3.0, 4);
        QVERIFY(rates.isOk());
        QCOMPARE(rates->size(), size_t(4));
        const double p = (*rates)[0];
        QVERIFY(std::abs(p + p * p + p * p * p + p * p * p * p - 2.0) < 1e-9);
        QCOMPARE((*spec::synthAcceptance(5.0, 4))[3], 1.0);
        QCOMPARE((*spec::synthAcceptance(1.0, 4))[0], 0.0);
        QVERIFY(!spec::synthAcceptance(6.0, 4).isOk());
        QVERIFY(!spec::synthAcceptance(0.5, 4).isOk());
        QVERIFY(!spec::synthAcceptance(std::nan(""), 4).isOk());
        QVERIFY(!spec::synthAcceptance(2.0, 0).isOk());
        // Measured: the mean accepted length over many verifications.
        spec::SpeculatorConfig c;
        c.synthAccept = *rates;
        c.maxDraft = 4;
        spec::Speculator sp(c);
        const std::vector<int32_t> drafts{1, 1, 1, 1};
        double total = 0;
        const int n = 20000;
        for (int i = 0; i < n; ++i)
            total += double(spec::verifyDrafts(drafts, [](int) { return 2; }, [&](int j) { return sp.synthAccept(j); })
                                .size());
        QVERIFY2(std::abs(total / n - 3.0) < 0.05, qPrintable(QString::number(total / n)));
    }

    void speculationConfigRejectsBadValues() {
        SpeculationConfig c;
        QVERIFY(c.validate().isOk());
        c.maxDraft = 0;
        QVERIFY(!c.validate().isOk());
        c.maxDraft = 65;
        QVERIFY(!c.validate().isOk());
        c.maxDraft = 4;
        c.minDraft = 5;
        QVERIFY(!c.validate().isOk());
        c.minDraft = 1;
        c.synthLength = 6.0;
        QVERIFY(!c.validate().isOk());
        c.synthLength = 3.0;
        QVERIFY(c.validate().isOk());
        QVERIFY(parseSpecTypes("ngram", c).isOk());
        QVERIFY(c.ngram);
        QVERIFY(parseSpecTypes("none", c).isOk());
        QVERIFY(!c.ngram);
        QVERIFY(parseSpecTypes("ngram,draft", c).isOk());
        QVERIFY(c.ngram && c.draft);
        QVERIFY(!c.validate().isOk()); // draft without a draft model
        c.draftModel = "small.gguf";
        QVERIFY(c.validate().isOk());
        QVERIFY(parseSpecTypes("mtp", c).isOk());
        QVERIFY(c.mtp && !c.draft && !c.ngram);
        QVERIFY(!c.validate().isOk()); // the head and a draft model at once
        QCOMPARE(parseSpecTypes("ngram,bogus", c).code(), ErrorCode::InvalidArgument);
    }

    // The verification rule leaves the output distribution the target's: over many draws from a
    // fixed 6-token distribution with drafts from another distribution, the first emitted token is
    // distributed as the target (chi-square below the 0.999 quantile for 5 degrees of freedom,
    // 20.5); accepting every draft instead gives the drafts' distribution and fails the same test.
    void verificationKeepsTheTargetDistribution() {
        const std::vector<float> logits{2.0f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f};
        std::vector<double> p(logits.size());
        double z = 0;
        for (size_t i = 0; i < p.size(); ++i) z += (p[i] = std::exp(double(logits[i])));
        for (double& v : p) v /= z;
        SamplingParams sp;
        sp.temperature = 1.0f;
        sp.seed = 12345;
        sample::Sampler sampler(sp);
        sample::Rng draftRng(99);
        const std::vector<double> q{0.05, 0.05, 0.1, 0.2, 0.3, 0.3}; // the drafter's own preferences
        auto drawDraft = [&] {
            double u = draftRng.uniform(), c = 0;
            for (size_t i = 0; i < q.size(); ++i)
                if (u < (c += q[i])) return int32_t(i);
            return int32_t(q.size() - 1);
        };
        const int n = 40000;
        std::vector<int> rule(p.size(), 0), acceptAll(p.size(), 0), second(p.size(), 0);
        for (int i = 0; i < n; ++i) {
            const std::vector<int32_t> drafts{drawDraft(), drawDraft()};
            auto draw = [&](int) { return sampler.sample(logits, {}).token; };
            const std::vector<int32_t> out = spec::verifyDrafts(drafts, draw);
            ++rule[size_t(out[0])];
            if (out.size() > 1) ++second[size_t(out[1])];
            const std::vector<int32_t> all = spec::verifyDrafts(drafts, draw, [](int) { return std::optional<bool>(true); });
            ++acceptAll[size_t(all[0])];
        }
        const double xRule = chiSquareOf(rule, p, n), xAll = chiSquareOf(acceptAll, p, n);
        qInfo("chi-square: rule %.2f, accept-all %.1f (0.999 quantile 20.5)", xRule, xAll);
        QVERIFY2(xRule < 20.5, qPrintable(QString::number(xRule)));
        QVERIFY2(xAll > 20.5, qPrintable(QString::number(xAll)));
        // The second token (after an accepted first draft) is distributed as the target too.
        int seconds = 0;
        for (int c : second) seconds += c;
        QVERIFY(seconds > 1000);
        QVERIFY2(chiSquareOf(second, p, seconds) < 20.5, qPrintable(QString::number(chiSquareOf(second, p, seconds))));
    }
};

QTEST_APPLESS_MAIN(TestSpeculation)
#include "test_speculation.moc"
