// Scheduler tests of prompts holding images: chunks end where an image starts, an image is
// computed in one step (over the budget when it must), and an image the model sees at once gets
// a step of its own beside single decode tokens only.
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

std::vector<int32_t> sampleAll(const SchedulerOutput& out) {
    std::vector<int32_t> v;
    for (const ScheduledSeq& q : out.seqs)
        if (q.samples) v.push_back(7);
    return v;
}

// (id, start, tokens) of each scheduled sequence.
std::vector<std::array<int, 3>> chunks(const SchedulerOutput& out) {
    std::vector<std::array<int, 3>> v;
    for (const ScheduledSeq& q : out.seqs) v.push_back({int(q.id), q.start, q.numTokens});
    return v;
}

Request withImage(RequestId id, int promptLen, int imageStart, int imageLength, bool atOnce, int firstToken = 1000) {
    Request r = makeRequest(id, promptLen, 4, firstToken);
    r.images.push_back({imageStart, imageLength});
    r.imagesAtOnce = atOnce;
    return r;
}

} // namespace

class TestSchedulerImages : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void anImageIsOneChunkEvenOverTheBudget() {
        // 40 prompt tokens, an image at [10, 30), steps of 16: the text before it, the image
        // whole (20 > 16, alone in its step), then the rest in two chunks.
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 16, .contextLength = 256}, cache);
        QVERIFY(s.addRequest(withImage(1, 40, 10, 20, false)).isOk());
        const std::vector<std::array<int, 3>> want[] = {{{1, 0, 10}}, {{1, 10, 20}}, {{1, 30, 10}}};
        for (const auto& w : want) {
            SchedulerOutput out = s.schedule();
            QCOMPARE(chunks(out), w);
            QVERIFY(!out.withinSequence); // this model reads images causally
            s.update(out, sampleAll(out));
        }
    }

    void anImageSeenAtOnceStepsBesideDecodesOnly() {
        // Request 1 decodes (with a draft offered); request 2's image is due; request 3 waits
        // with a prompt of its own. The image's step: request 1's one token (its draft dropped)
        // and the image; request 3 waits for the next step.
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 64, .contextLength = 256}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 5, 20)).isOk());
        SchedulerOutput first = s.schedule();
        s.update(first, sampleAll(first));
        QVERIFY(s.addRequest(withImage(2, 30, 6, 16, true, 2000)).isOk());
        SchedulerOutput text = s.schedule(); // request 1 decodes, request 2's text before the image
        QCOMPARE(chunks(text), (std::vector<std::array<int, 3>>{{1, 5, 1}, {2, 0, 6}}));
        QVERIFY(!text.withinSequence);
        s.update(text, sampleAll(text));
        QVERIFY(s.setDraft(1, {7, 7, 7}));
        QVERIFY(s.addRequest(makeRequest(3, 8, 4, 3000)).isOk());
        SchedulerOutput image = s.schedule();
        QCOMPARE(chunks(image), (std::vector<std::array<int, 3>>{{1, 6, 1}, {2, 6, 16}}));
        QVERIFY(image.withinSequence);
        QVERIFY(image.seqs[0].drafts.empty());
        s.update(image, sampleAll(image));
        SchedulerOutput after = s.schedule(); // causal again: the rest of 2, and 3 admitted
        QCOMPARE(chunks(after), (std::vector<std::array<int, 3>>{{1, 7, 1}, {2, 22, 8}, {3, 0, 8}}));
        QVERIFY(!after.withinSequence);
    }

    void aPromptChunkBeforeTheImageDefersIt() {
        // Request 1's long prompt is being chunked when request 2 arrives with an image at
        // position 0: request 2's image waits while 1's chunk is in the step, then gets a step
        // to itself (1 still has prompt left, so it sits that step out).
        KvCacheManager cache({.numBlocks = 64, .blockSize = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 16, .contextLength = 256}, cache);
        QVERIFY(s.addRequest(makeRequest(1, 40, 4)).isOk());
        QVERIFY(s.addRequest(withImage(2, 12, 0, 8, true, 2000)).isOk());
        SchedulerOutput a = s.schedule();
        QCOMPARE(chunks(a), (std::vector<std::array<int, 3>>{{1, 0, 16}}));
        s.update(a, sampleAll(a));
        SchedulerOutput b = s.schedule();
        QCOMPARE(chunks(b), (std::vector<std::array<int, 3>>{{1, 16, 16}}));
        s.update(b, sampleAll(b));
        SchedulerOutput c = s.schedule(); // 1's last 8, then 2 is admitted: its image cannot join
        QCOMPARE(chunks(c), (std::vector<std::array<int, 3>>{{1, 32, 8}}));
        s.update(c, sampleAll(c));
        SchedulerOutput d = s.schedule(); // 1 decodes; 2's image beside it
        QCOMPARE(chunks(d), (std::vector<std::array<int, 3>>{{1, 40, 1}, {2, 0, 8}}));
        QVERIFY(d.withinSequence);
    }
};

QTEST_GUILESS_MAIN(TestSchedulerImages)
#include "test_scheduler_images.moc"
