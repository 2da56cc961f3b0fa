// Recurrent-state slots of hybrid models, exactly: which slot ids live sequences and snapshots
// get, LRU eviction order and pins; and the scheduler's use of them: the slots each chunk reads,
// writes and snapshots into, resuming an admission from the longest snapshot, fork copies, and
// slots freed at finish, cancel and preemption.
#include "kv/kv_cache_manager.h"
#include "kv/state_cache.h"
#include "sched/scheduler.h"
#include "sched_request.h"

#include <QtTest>

#include <vector>

using namespace hearth;
using namespace hearth::sched;
using hearth::kv::KvCacheManager;
using hearth::test::makeRequest;
using hearth::kv::StateCache;

namespace {

using Snaps = std::vector<std::pair<int32_t, int32_t>>;

const ScheduledSeq* find(const SchedulerOutput& out, RequestId id) {
    for (const ScheduledSeq& s : out.seqs)
        if (s.id == id) return &s;
    return nullptr;
}

std::vector<int32_t> samples(const SchedulerOutput& out, int32_t token = 7) {
    std::vector<int32_t> v;
    for (const ScheduledSeq& s : out.seqs)
        if (s.samples) v.push_back(token);
    return v;
}

} // namespace

class TestStateCache : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void liveSlotsInOrder() {
        StateCache c({.numSlots = 3});
        QCOMPARE(c.acquire(10), 0);
        QCOMPARE(c.acquire(11), 1);
        QCOMPARE(c.acquire(10), 0); // the same slot again
        QCOMPARE(c.acquire(12), 2);
        QCOMPARE(c.acquire(13), -1); // every slot live
        c.release(11);
        QCOMPARE(c.liveSlot(11), -1);
        QCOMPARE(c.acquire(13), 1);
        QCOMPARE(c.numLive(), 3);
    }

    void snapshotsAreFoundOnceCommittedAndEvictedLeastRecentFirst() {
        StateCache c({.numSlots = 4});
        const int32_t a = c.reserveSnapshot(100), b = c.reserveSnapshot(200), d = c.reserveSnapshot(300);
        QCOMPARE(std::vector<int32_t>({a, b, d}), std::vector<int32_t>({0, 1, 2}));
        QCOMPARE(c.reserveSnapshot(100), -1); // already there
        const std::vector<kv::BlockHash> prompt{100, 200, 300};
        QCOMPARE(c.find(prompt).slot, -1); // reserved: not yet written
        for (int32_t s : {a, b, d}) c.commitSnapshot(s);
        QCOMPARE(c.snapshotOrder(), std::vector<int32_t>({0, 1, 2}));
        // The longest prefix wins and becomes the most recent.
        kv::StateSnapshot found = c.find(prompt);
        QCOMPARE(found.blocks, 3);
        QCOMPARE(found.slot, 2);
        found = c.find(std::vector<kv::BlockHash>{100, 999});
        QCOMPARE(found.blocks, 1);
        QCOMPARE(found.slot, 0);
        QCOMPARE(c.snapshotOrder(), std::vector<int32_t>({1, 2, 0}));
        // A live sequence takes the free slot, then evicts the least recent snapshot (1) ...
        QCOMPARE(c.acquire(1), 3);
        QCOMPARE(c.acquire(2), 1);
        QCOMPARE(c.find(std::vector<kv::BlockHash>{100, 200}).blocks, 1);
        // ... but never a pinned one: slot 2 is skipped for 0.
        c.pin(2);
        QCOMPARE(c.acquire(3), 0);
        QCOMPARE(c.acquire(4), -1);
        c.unpin(2);
        QCOMPARE(c.acquire(4), 2);
        QCOMPARE(c.numSnapshots(), 0);
    }

    void abandonedSnapshotsFreeTheirSlot() {
        StateCache c({.numSlots = 1});
        const int32_t s = c.reserveSnapshot(5);
        QCOMPARE(s, 0);
        QCOMPARE(c.acquire(1), -1); // a reserved snapshot is not evictable
        c.abandonSnapshot(s);
        QCOMPARE(c.acquire(1), 0);
    }

    void noCachingNoSnapshots() {
        StateCache c({.numSlots = 2, .prefixCaching = false});
        QCOMPARE(c.reserveSnapshot(1), -1);
        QCOMPARE(c.find(std::vector<kv::BlockHash>{1}).slot, -1);
    }

    void schedulerAssignsSlotsPerChunk() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        StateCache states({.numSlots = 8});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 40, .contextLength = 1024, .snapshotEvery = 32}, cache,
                    &states);
        QVERIFY(s.addRequest(makeRequest(1, 70, 4)).isOk());
        // Chunk 1: [0, 40) from an empty state into live slot 0, a snapshot at 32 (slot 1).
        SchedulerOutput o = s.schedule();
        const ScheduledSeq* q = find(o, 1);
        QVERIFY(q);
        QCOMPARE(q->stateRead, -1);
        QCOMPARE(q->stateWrite, 0);
        QCOMPARE(q->snapshots, Snaps({{32, 1}}));
        s.update(o, samples(o));
        // Chunk 2: [40, 70) continues slot 0; snapshots at 64 (every 32) — 64 is also the
        // prompt's last full block.
        o = s.schedule();
        q = find(o, 1);
        QCOMPARE(q->start, 40);
        QCOMPARE(q->stateRead, 0);
        QCOMPARE(q->stateWrite, 0);
        QCOMPARE(q->snapshots, Snaps({{64, 2}}));
        s.update(o, samples(o));
        QCOMPARE(states.numSnapshots(), 2);
        // Finishing frees the live slot; the snapshots stay.
        while (s.hasWork()) {
            o = s.schedule();
            s.update(o, samples(o));
        }
        QCOMPARE(states.numLive(), 0);
        QCOMPARE(states.numSnapshots(), 2);
    }

    void admissionResumesFromTheLongestSnapshot() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        StateCache states({.numSlots = 8});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 512, .contextLength = 1024, .snapshotEvery = 32}, cache,
                    &states);
        QVERIFY(s.addRequest(makeRequest(1, 100, 1)).isOk());
        SchedulerOutput o = s.schedule();
        // Snapshots at 32, 64 and 96 (96: also the prompt's last full block).
        QCOMPARE(find(o, 1)->snapshots, Snaps({{32, 1}, {64, 2}, {96, 3}}));
        s.update(o, samples(o));
        QVERIFY(!s.hasWork());
        // The same first 80 tokens: K/V blocks cover 80 (5 blocks), the latest snapshot within is
        // at 64, so the new request starts there, reading snapshot slot 2.
        Request r = makeRequest(2, 90, 1);
        for (int i = 80; i < 90; ++i) r.tokens[size_t(i)] = 5000 + i;
        QVERIFY(s.addRequest(r).isOk());
        o = s.schedule();
        const ScheduledSeq* q = find(o, 2);
        QCOMPARE(q->start, 64);
        QCOMPARE(q->stateRead, 2);
        QCOMPARE(q->stateWrite, 0);
        QCOMPARE(s.request(2)->numCachedPrompt, 64);
        // Its chunk snapshots the prompt's last full block (80) into the next free slot.
        QCOMPARE(q->snapshots, Snaps({{80, 4}}));
        s.update(o, samples(o));
        QVERIFY(!s.hasWork());
        // Its first step done, slot 2 is unpinned: live sequences take the free slots (0 was
        // freed last), then evict snapshots least recent first: 1, 3, 2 (found), 4.
        std::vector<int32_t> got;
        for (RequestId id = 10; id < 18; ++id) got.push_back(states.acquire(id));
        QCOMPARE(got, std::vector<int32_t>({0, 5, 6, 7, 1, 3, 2, 4}));
    }

    void aDifferentPrefixFindsNothing() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        StateCache states({.numSlots = 8});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 512, .contextLength = 1024, .snapshotEvery = 32}, cache,
                    &states);
        QVERIFY(s.addRequest(makeRequest(1, 100, 1)).isOk());
        SchedulerOutput o = s.schedule();
        s.update(o, samples(o));
        QVERIFY(s.addRequest(makeRequest(2, 100, 1, 1001)).isOk()); // every token shifted
        o = s.schedule();
        QCOMPARE(find(o, 2)->start, 0);
        QCOMPARE(find(o, 2)->stateRead, -1);
    }

    void forksCopyTheParentsState() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        StateCache states({.numSlots = 8});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 512, .contextLength = 1024}, cache, &states);
        QVERIFY(s.addRequest(makeRequest(1, 20, 5)).isOk());
        SchedulerOutput o = s.schedule();
        QCOMPARE(find(o, 1)->stateWrite, 0);
        auto done = s.fork(1, 2, 20, 9);
        QVERIFY(done.isOk());
        QVERIFY(!*done);
        s.update(o, samples(o));
        o = s.schedule();
        // The child got the next free slot and a copy of the parent's state before this step.
        QCOMPARE(o.stateCopies, Snaps({{0, find(o, 2)->stateWrite}}));
        QCOMPARE(find(o, 2)->stateRead, find(o, 2)->stateWrite);
        QVERIFY(find(o, 2)->stateWrite != 0);
        QCOMPARE(find(o, 1)->stateRead, 0);
        s.update(o, samples(o));
        QVERIFY(s.schedule().stateCopies.empty()); // once
    }

    void anAbandonedStepFreesItsSnapshots() {
        KvCacheManager cache({.numBlocks = 64, .blockSize = 16});
        StateCache states({.numSlots = 8});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 512, .contextLength = 1024, .snapshotEvery = 32}, cache,
                    &states);
        QVERIFY(s.addRequest(makeRequest(1, 100, 4)).isOk());
        SchedulerOutput o = s.schedule();
        QCOMPARE(find(o, 1)->snapshots.size(), size_t(3));
        QCOMPARE(states.numFree(), 4); // the live slot and three reserved snapshots
        s.abandon(o);
        QCOMPARE(states.numFree(), 7);
        QCOMPARE(states.numSnapshots(), 0);
    }

    void cancelAndPreemptionFreeTheSlot() {
        KvCacheManager cache({.numBlocks = 4, .blockSize = 16});
        StateCache states({.numSlots = 4});
        Scheduler s({.maxNumSeqs = 4, .maxBatchedTokens = 512, .contextLength = 1024, .snapshotEvery = 1024}, cache,
                    &states);
        QVERIFY(s.addRequest(makeRequest(1, 20, 40)).isOk());
        QVERIFY(s.addRequest(makeRequest(2, 20, 40, 3000)).isOk());
        SchedulerOutput o = s.schedule();
        s.update(o, samples(o));
        QCOMPARE(states.numLive(), 2);
        QVERIFY(s.cancel(1));
        QCOMPARE(states.numLive(), 1);
        // Request 2 grows until the 4 blocks run out; a third request is then preempted.
        QVERIFY(s.addRequest(makeRequest(3, 20, 40, 6000)).isOk());
        int preempted = 0;
        for (int i = 0; i < 80 && s.hasWork(); ++i) {
            o = s.schedule();
            preempted += int(o.preempted.size());
            QVERIFY(states.numLive() <= 2);
            s.update(o, samples(o));
        }
        QVERIFY(preempted > 0);
        QCOMPARE(states.numLive(), 0);
    }
};

QTEST_APPLESS_MAIN(TestStateCache)
#include "test_state_cache.moc"
