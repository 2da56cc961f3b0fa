// Scheduler tests: decode-first continuous batching, chunked prefill, admission limits,
// preemption when blocks run out, cancellation, prefix reuse, and finish reasons.
#include "kv/kv_cache_manager.h"
#include "sched/scheduler.h"
#include "sched_request.h"

#include <QtTest>

#include <vector>

using namespace hearth;
using namespace hearth::sched;
using hearth::kv::KvCacheManager;
using hearth::test::makeRequest;

namespace {

// A stand-in for the model: the sampled token depends only on the request and position.
std::vector<int32_t> fakeSample(const Scheduler& s, const SchedulerOutput& out) {
    std::vector<int32_t> v;
    for (const ScheduledSeq& q : out.seqs)
        if (q.samples) v.push_back(int32_t((q.id * 7 + uint64_t(q.start + q.numTokens)) % 50));
    (void)s;
    return v;
}

std::vector<int> chunkSizes(const SchedulerOutput& out, RequestId id) {
    std::vector<int> v;
    for (const ScheduledSeq& q : out.seqs)
        if (q.id == id) v.push_back(q.numTokens);
    return v;
}

} // namespace

class TestScheduler : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void prefillIsLimitedWhileStreamsDecode() {
        // With no step times yet (time taken as proportional to tokens), 20 decoding sequences
        // let (2.5 - 1) * 20 = 30 prompt tokens into a step; with nobody decoding the whole
        // budget goes to the prompt.
        KvCacheManager cache({.numBlocks = 256, .blockSize = 16});
        Scheduler s({.maxNumSeqs = 32, .maxBatchedTokens = 512, .contextLength = 4096}, cache);
        for (RequestId id = 1; id <= 20; ++id) QVERIFY(s.addRequest(makeRequest(id, 4, 100, int(id) * 10)).isOk());
        SchedulerOutput first = s.schedule();
        QCOMPARE(first.totalTokens, 80);
        s.update(first, fakeSample(s, first));
        QVERIFY(s.addRequest(makeRequest(99, 1000, 4, 5000)).isOk());
        SchedulerOutput mixed = s.schedule();
        QCOMPARE(chunkSizes(mixed, 99), std::vector<int>{30});
        QCOMPARE(mixed.totalTokens, 50);
        s.update(mixed, fakeSample(s, mixed));
        // Steps measured at 10 ms + 0.5 ms per token: base / perToken = 20, so the allowance
        // is 1.5 * (20 + 20) = 60.
        for (int n : {20, 50, 100, 300, 20, 512}) s.recordStepTime(n, 10.0 + 0.5 * n);
        QCOMPARE(s.prefillAllowance(20), 60);
        QCOMPARE(s.prefillAllowance(1), 31);
        SchedulerOutput measured = s.schedule();
        QCOMPARE(chunkSizes(measured, 99), std::vector<int>{60});
        s.update(measured, fakeSample(s, measured));
        for (RequestId id = 1; id <= 20; ++id) s.cancel(id);
        SchedulerOutput alone = s.schedule();
        QCOMPARE(chunkSizes(alone, 99), std::vector<int>{512});
    }

    void forkSharesThePromptAndCopiesTheLastBlockOnWrite() {
        // Blocks of 4; a 6-token prompt fills block 0 and half of block 1. The fork shares both;
        // the first decode of each sequence writes position 6 in shared block 1, so the first
        // writer gets a private copy (a fresh block) and the last holder keeps the original.
        KvCacheManager cache({.numBlocks = 8, .blockSize = 4, .prefixCaching = false});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 16, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 6, 3)).isOk());
        SchedulerOutput prefill = s.schedule();
        QCOMPARE(prefill.seqs.size(), size_t(1));
        QVERIFY(prefill.seqs[0].samples);
        const std::vector<int32_t> parentBlocks(cache.blockTable(1).begin(), cache.blockTable(1).end());
        QCOMPARE(parentBlocks, (std::vector<int32_t>{0, 1}));
        auto forked = s.fork(1, 2, 6, 42);
        QVERIFY(forked.isOk());
        QVERIFY(!*forked);
        QCOMPARE(std::vector<int32_t>(cache.blockTable(2).begin(), cache.blockTable(2).end()), parentBlocks);
        QCOMPARE(cache.pool().refCount(1), 2);
        s.update(prefill, std::vector<int32_t>{41});
        QCOMPARE(s.request(2)->tokens.back(), 42);
        QCOMPARE(s.request(1)->tokens.back(), 41);

        SchedulerOutput decode = s.schedule();
        QCOMPARE(decode.seqs.size(), size_t(2));
        QCOMPARE(decode.copies.size(), size_t(1));
        QCOMPARE(decode.copies[0].src, 1);
        QCOMPARE(decode.copies[0].dst, 2);
        QCOMPARE(std::vector<int32_t>(cache.blockTable(1).begin(), cache.blockTable(1).end()),
                 (std::vector<int32_t>{0, 2}));
        QCOMPARE(std::vector<int32_t>(cache.blockTable(2).begin(), cache.blockTable(2).end()),
                 (std::vector<int32_t>{0, 1}));
        QCOMPARE(cache.pool().refCount(0), 2);
        QCOMPARE(cache.pool().refCount(1), 1);
        // A fork of a request that is not running, or onto an existing id, is refused.
        QVERIFY(!s.fork(99, 3, 6, 1).isOk());
        QVERIFY(!s.fork(1, 2, 6, 1).isOk());
        s.cancel(1);
        s.cancel(2);
        QCOMPARE(cache.numUsedBlocks(), 0);
    }

    void chunkedPrefillThenDecode() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 8, .contextLength = 256}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 20, 3)).isOk());
        std::vector<std::vector<int>> steps;
        while (s.hasWork()) {
            SchedulerOutput out = s.schedule();
            steps.push_back(chunkSizes(out, 1));
            s.update(out, fakeSample(s, out));
        }
        // 20-token prompt in chunks of 8, 8, 4 (the last one samples), then 2 decodes.
        QCOMPARE(steps, (std::vector<std::vector<int>>{{8}, {8}, {4}, {1}, {1}}));
        const Request* r = s.request(1);
        QCOMPARE(r->finish, FinishReason::Length);
        QCOMPARE(r->numGenerated(), 3);
        QCOMPARE(cache.numUsedBlocks(), 0);
        QCOMPARE(int(s.prefillTokensComputed()), 20);
    }

    void decodesGoFirstAndPromptsFillTheRest() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 8, .contextLength = 256}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 4, 10)).isOk());
        SchedulerOutput first = s.schedule();
        s.update(first, fakeSample(s, first)); // request 1 is now decoding
        QVERIFY(s.addRequest(makeRequest(2, 30, 2)).isOk());
        SchedulerOutput out = s.schedule();
        QCOMPARE(int(out.seqs.size()), 2);
        QCOMPARE(out.seqs[0].id, RequestId(1));
        QCOMPARE(out.seqs[0].numTokens, 1);
        QVERIFY(out.seqs[0].samples);
        QCOMPARE(out.seqs[1].id, RequestId(2));
        QCOMPARE(out.seqs[1].numTokens, 7);
        QVERIFY(!out.seqs[1].samples);
        QCOMPARE(out.totalTokens, 8);
    }

    void respectsMaxNumSeqs() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 2, .maxBatchedTokens = 100, .contextLength = 256}, cache);
        for (RequestId id = 1; id <= 3; ++id) QVERIFY(s.addRequest(makeRequest(id, 4, 2)).isOk());
        SchedulerOutput out = s.schedule();
        QCOMPARE(int(out.seqs.size()), 2);
        QCOMPARE(s.numWaiting(), 1);
    }

    void refusesWhatCanNeverFitAndWhenQueueIsFull() {
        KvCacheManager cache({.numBlocks = 4, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 2, .maxBatchedTokens = 16, .maxWaiting = 2,
                     .contextLength = 32},
                    cache);
        Status tooLong = s.addRequest(makeRequest(1, 30, 3));
        QCOMPARE(tooLong.code(), ErrorCode::OutOfRange);
        QVERIFY(QString::fromStdString(tooLong.message()).contains("context length"));
        Status tooBig = s.addRequest(makeRequest(2, 16, 4)); // 20 tokens = 5 blocks > 4
        QCOMPARE(tooBig.code(), ErrorCode::OutOfRange);
        QVERIFY(s.addRequest(makeRequest(3, 4, 1)).isOk());
        QVERIFY(s.addRequest(makeRequest(4, 4, 1)).isOk());
        QCOMPARE(s.addRequest(makeRequest(5, 4, 1)).code(), ErrorCode::Busy);
        QCOMPARE(s.addRequest(makeRequest(3, 4, 1)).code(), ErrorCode::InvalidArgument);
        QCOMPARE(s.addRequest(makeRequest(6, 0, 1)).code(), ErrorCode::InvalidArgument);
    }

    void preemptsNewestWhenBlocksRunOutAndRecomputesIt() {
        KvCacheManager cache({.numBlocks = 4, .blockSize = 4, .prefixCaching = false});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 6, 6)).isOk()); // needs 3 blocks in the end
        QVERIFY(s.addRequest(makeRequest(2, 6, 6)).isOk());
        SchedulerOutput out = s.schedule(); // both admitted: 2 blocks each, cache full
        QCOMPARE(int(out.seqs.size()), 2);
        QCOMPARE(cache.numFreeBlocks(), 0);
        s.update(out, fakeSample(s, out)); // 7 tokens each, 6 computed
        for (int i = 0; i < 2; ++i) {      // computing positions 6 and 7 fits in 2 blocks
            out = s.schedule();
            QVERIFY(out.preempted.empty());
            s.update(out, fakeSample(s, out));
        }
        // 9 tokens each, 8 computed: position 8 needs a third block and none is free.
        out = s.schedule();
        QCOMPARE(out.preempted, (std::vector<RequestId>{2}));
        QCOMPARE(int(out.seqs.size()), 1);
        QCOMPARE(out.seqs[0].id, RequestId(1));
        QCOMPARE(s.request(2)->numComputed, 0);
        QCOMPARE(s.request(2)->state, RequestState::Waiting);
        QCOMPARE(s.numWaiting(), 1);
        s.update(out, fakeSample(s, out));
        // Run to completion: request 2 comes back and recomputes its 9 tokens in one chunk.
        bool sawRecompute = false;
        while (s.hasWork()) {
            out = s.schedule();
            for (const ScheduledSeq& q : out.seqs)
                if (q.id == 2 && q.start == 0 && q.numTokens == 9) sawRecompute = true;
            s.update(out, fakeSample(s, out));
        }
        QVERIFY(sawRecompute);
        QCOMPARE(s.request(1)->numGenerated(), 6);
        QCOMPARE(s.request(2)->numGenerated(), 6);
        QCOMPARE(s.request(2)->numPreemptions, 1);
        QCOMPARE(cache.numUsedBlocks(), 0);
    }

    void cancelFreesBlocksAtOnce() {
        KvCacheManager cache({.numBlocks = 16, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 10, 20)).isOk());
        SchedulerOutput out = s.schedule();
        QCOMPARE(cache.numUsedBlocks(), 3);
        QVERIFY(s.cancel(1));
        QCOMPARE(cache.numUsedBlocks(), 0);
        QCOMPARE(s.request(1)->finish, FinishReason::Cancelled);
        QVERIFY(!s.cancel(1));
        s.update(out, fakeSample(s, out)); // the in-flight step's result is ignored
        QCOMPARE(s.request(1)->numGenerated(), 0);
        QVERIFY(!s.hasWork());
        s.release(1);
        QVERIFY(s.request(1) == nullptr);
    }

    void sharedPrefixIsComputedOnce() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 128}, cache);
        Request a = makeRequest(1, 34, 1); // 32 shared tokens + 2 of its own
        Request b = makeRequest(2, 34, 1);
        b.tokens[32] = 7;
        b.tokens[33] = 8;
        QVERIFY(s.addRequest(a).isOk());
        SchedulerOutput out = s.schedule();
        s.update(out, fakeSample(s, out));
        QVERIFY(s.addRequest(b).isOk());
        out = s.schedule();
        QCOMPARE(out.seqs[0].start, 32);
        QCOMPARE(out.seqs[0].numTokens, 2);
        s.update(out, fakeSample(s, out));
        QCOMPARE(s.request(2)->numCachedPrompt, 32);
        QCOMPARE(int(s.prefillTokensComputed()), 34 + 2);
        QCOMPARE(cache.prefixHitTokens(), uint64_t(32));
        QCOMPARE(cache.prefixQueryTokens(), uint64_t(68));
    }

    void stopTokenFinishesWithStop() {
        KvCacheManager cache({.numBlocks = 16, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 64}, cache);
        Request r = makeRequest(1, 4, 10);
        r.stopTokens = {42};
        QVERIFY(s.addRequest(r).isOk());
        SchedulerOutput out = s.schedule();
        auto done = s.update(out, std::vector<int32_t>{5});
        QVERIFY(done.empty());
        out = s.schedule();
        done = s.update(out, std::vector<int32_t>{42});
        QCOMPARE(done, (std::vector<RequestId>{1}));
        QCOMPARE(s.request(1)->finish, FinishReason::Stop);
        QCOMPARE(s.request(1)->tokens.back(), 42);
    }

    void manySequencesShareOneStep() {
        KvCacheManager cache({.numBlocks = 256, .blockSize = 16});
        Scheduler s({.maxNumSeqs = 16, .maxBatchedTokens = 512, .contextLength = 512}, cache);
        for (RequestId id = 1; id <= 16; ++id)
            QVERIFY(s.addRequest(makeRequest(id, 16, 8, int(id) * 100)).isOk());
        int steps = 0;
        while (s.hasWork()) {
            SchedulerOutput out = s.schedule();
            QVERIFY(out.totalTokens <= 512);
            s.update(out, fakeSample(s, out));
            ++steps;
        }
        QCOMPARE(steps, 8); // one prefill step (all 16 prompts) + 7 batched decode steps
        for (RequestId id = 1; id <= 16; ++id) QCOMPARE(s.request(id)->numGenerated(), 8);
    }

    // Encoder inputs (wholePrompt) are computed in one step or wait for one that holds them; one
    // longer than a step is refused. A plain prompt beside them is chunked as usual.
    void wholePromptsAreNeverChunked() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        Scheduler s({.maxNumSeqs = 8, .maxBatchedTokens = 64, .contextLength = 512}, cache);
        auto encoder = [](RequestId id, int len) {
            sched::Request r = makeRequest(id, len, 0);
            r.embedding = true;
            r.wholePrompt = true;
            return r;
        };
        const Status tooLong = s.addRequest(encoder(9, 65));
        QCOMPARE(tooLong.code(), ErrorCode::OutOfRange);
        QVERIFY2(tooLong.message().find("one step") != std::string::npos, tooLong.toString().c_str());
        QVERIFY(s.addRequest(encoder(1, 40)).isOk());
        QVERIFY(s.addRequest(encoder(2, 30)).isOk()); // does not fit beside 1: waits
        QVERIFY(s.addRequest(encoder(3, 20)).isOk()); // FIFO: waits behind 2
        SchedulerOutput first = s.schedule();
        QCOMPARE(chunkSizes(first, 1), std::vector<int>{40});
        QCOMPARE(first.seqs.size(), size_t(1));
        s.update(first, fakeSample(s, first));
        SchedulerOutput second = s.schedule();
        QCOMPARE(chunkSizes(second, 2), std::vector<int>{30});
        QCOMPARE(chunkSizes(second, 3), std::vector<int>{20});
        for (const ScheduledSeq& q : second.seqs) QVERIFY(q.samples && q.start == 0);
        s.update(second, fakeSample(s, second));
        // Negative control: the same lengths without wholePrompt are chunked to fill the step.
        QVERIFY(s.addRequest(makeRequest(4, 40, 1, 3000)).isOk()); // ids no earlier prompt had
        QVERIFY(s.addRequest(makeRequest(5, 30, 1, 5000)).isOk());
        SchedulerOutput plain = s.schedule();
        QCOMPARE(chunkSizes(plain, 5), std::vector<int>{24});
    }
};

QTEST_GUILESS_MAIN(TestScheduler)
#include "test_scheduler.moc"
