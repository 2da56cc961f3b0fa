// Exact tests of the KV block pool and cache manager: specific block ids, eviction order,
// reference counts, prefix reuse, hash collisions and copy-on-write after forks.
#include "kv/block_pool.h"
#include "kv/kv_cache_manager.h"

#include <QtTest>

#include <numeric>
#include <vector>

using namespace hearth::kv;

namespace {

std::vector<int32_t> iota(int n, int start = 100) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), start);
    return v;
}

std::vector<BlockId> table(const KvCacheManager& m, SeqId s) {
    auto t = m.blockTable(s);
    return {t.begin(), t.end()};
}

using Ids = std::vector<BlockId>;

} // namespace

class TestKvCache : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void poolAllocatesFromHeadInOrder() {
        BlockPool pool(6);
        QCOMPARE(pool.numFree(), 6);
        QCOMPARE(pool.freeQueue(), (Ids{0, 1, 2, 3, 4, 5}));
        auto a = pool.allocate(2);
        QVERIFY(a);
        QCOMPARE(*a, (Ids{0, 1}));
        auto b = pool.allocate(3);
        QCOMPARE(*b, (Ids{2, 3, 4}));
        QCOMPARE(pool.numFree(), 1);
        QVERIFY(!pool.allocate(2)); // not enough: nothing changes
        QCOMPARE(pool.numFree(), 1);
        QCOMPARE(pool.refCount(0), 1);
        QCOMPARE(pool.refCount(5), 0);
    }

    void releasedBlocksJoinTailInGivenOrder() {
        BlockPool pool(4);
        auto a = pool.allocate(4);
        const Ids reversed{3, 1};
        pool.release(reversed);
        QCOMPARE(pool.freeQueue(), (Ids{3, 1}));
        pool.touch(Ids{3}); // a hit on a free block takes it off the queue
        QCOMPARE(pool.freeQueue(), (Ids{1}));
        QCOMPARE(pool.refCount(3), 1);
        pool.touch(Ids{0});
        QCOMPARE(pool.refCount(0), 2);
        pool.release(Ids{0});
        QCOMPARE(pool.refCount(0), 1);
        QCOMPARE(pool.freeQueue(), (Ids{1}));
    }

    void cachedBlockSurvivesUntilReallocated() {
        BlockPool pool(2);
        auto a = pool.allocate(2);
        const auto toks = iota(4);
        const BlockHash h = hashBlockTokens(kRootHash, toks);
        QVERIFY(pool.cacheBlock(0, h, kRootHash, toks));
        QVERIFY(!pool.cacheBlock(1, h, kRootHash, toks)); // identical content already cached
        QCOMPARE(pool.numCachedBlocks(), 1);
        pool.release(Ids{0});
        QCOMPARE(pool.lookup(h, kRootHash, toks), std::optional<BlockId>(0));
        auto again = pool.allocate(1); // evicts block 0's cached contents
        QCOMPARE(*again, (Ids{0}));
        QVERIFY(!pool.lookup(h, kRootHash, toks));
        QVERIFY(!pool.isCached(0));
    }

    void collisionsNeverReuseWrongContent() {
        // A hash function that maps everything to the same value.
        KvCacheConfig cfg;
        cfg.numBlocks = 8;
        cfg.blockSize = 4;
        cfg.hashFn = [](BlockHash, std::span<const int32_t>) { return BlockHash{42}; };
        KvCacheManager m(cfg);
        const auto promptA = iota(9, 0);   // two full blocks + 1
        const auto promptB = iota(9, 500); // different tokens, same (forced) hashes
        QVERIFY(m.allocateSlots(1, 9));
        m.cacheComputedBlocks(1, promptA, 9);
        QCOMPARE(m.pool().numCachedBlocks(), 2);
        CachedPrefix hitB = m.findCachedPrefix(promptB);
        QCOMPARE(hitB.numTokens, 0);
        CachedPrefix hitA = m.findCachedPrefix(promptA);
        QCOMPARE(hitA.numTokens, 8);
        QCOMPARE(hitA.blocks, (Ids{0, 1}));
        // B computes and caches its own blocks beside A's under the same hash.
        QVERIFY(m.allocateSlots(2, 9));
        m.cacheComputedBlocks(2, promptB, 9);
        QCOMPARE(m.pool().numCachedBlocks(), 4);
        QCOMPARE(m.findCachedPrefix(promptB).blocks, (Ids{3, 4}));
    }

    void allocatesOnDemandAndFreesLastFirst() {
        KvCacheManager m({.numBlocks = 10, .blockSize = 16});
        QVERIFY(m.allocateSlots(7, 20)); // 2 blocks
        QCOMPARE(table(m, 7), (Ids{0, 1}));
        QVERIFY(m.allocateSlots(7, 32)); // still 2
        QCOMPARE(table(m, 7), (Ids{0, 1}));
        QVERIFY(m.allocateSlots(7, 33)); // third block on demand
        QCOMPARE(table(m, 7), (Ids{0, 1, 2}));
        QVERIFY(m.allocateSlots(8, 1));
        QCOMPARE(table(m, 8), (Ids{3}));
        m.free(7);
        QCOMPARE(m.pool().freeQueue(), (Ids{4, 5, 6, 7, 8, 9, 2, 1, 0}));
        QCOMPARE(m.numUsedBlocks(), 1);
        QVERIFY(!m.hasSequence(7));
    }

    void refusesWhenFullAndChangesNothing() {
        KvCacheManager m({.numBlocks = 3, .blockSize = 4});
        QVERIFY(m.allocateSlots(1, 8));
        QVERIFY(!m.allocateSlots(2, 8)); // needs 2, 1 free
        QVERIFY(!m.hasSequence(2));
        QCOMPARE(m.numFreeBlocks(), 1);
        QVERIFY(!m.allocateSlots(1, 13)); // needs 2 more
        QCOMPARE(table(m, 1), (Ids{0, 1}));
        QVERIFY(m.allocateSlots(1, 12));
        QCOMPARE(table(m, 1), (Ids{0, 1, 2}));
    }

    void reusesLongestCachedPrefix() {
        KvCacheManager m({.numBlocks = 16, .blockSize = 4});
        std::vector<int32_t> prompt = iota(10, 0); // blocks [0..3] [4..7] + 2
        QVERIFY(m.allocateSlots(1, 10));
        m.cacheComputedBlocks(1, prompt, 10);
        // Same first 8 tokens, different tail: both full blocks are reused.
        std::vector<int32_t> other = prompt;
        other[9] = 999;
        CachedPrefix hit = m.findCachedPrefix(other);
        QCOMPARE(hit.numTokens, 8);
        QCOMPARE(hit.blocks, (Ids{0, 1}));
        QCOMPARE(m.blocksNeeded(2, 11, &hit), 1);
        QVERIFY(m.allocateSlots(2, 11, &hit));
        QCOMPARE(table(m, 2), (Ids{0, 1, 3}));
        QCOMPARE(m.pool().refCount(0), 2);
        QCOMPARE(m.pool().refCount(1), 2);
        // A prompt that is exactly the cached blocks keeps its last token to compute.
        std::vector<int32_t> exact(prompt.begin(), prompt.begin() + 8);
        QCOMPARE(m.findCachedPrefix(exact).numTokens, 4);
        // A prompt differing in the first block reuses nothing (chained hashes).
        std::vector<int32_t> diverged = prompt;
        diverged[0] = 777;
        QCOMPARE(m.findCachedPrefix(diverged).numTokens, 0);
    }

    void freedPrefixIsRevivedFromFreeQueueAndEvictedLru() {
        KvCacheManager m({.numBlocks = 4, .blockSize = 2});
        const std::vector<int32_t> a{1, 2, 3, 4, 5};
        QVERIFY(m.allocateSlots(1, 5)); // blocks 0,1,2
        m.cacheComputedBlocks(1, a, 5);  // 0 and 1 cached (2 is partial)
        m.free(1);                       // queue: 3, 2, 1, 0
        QCOMPARE(m.pool().freeQueue(), (Ids{3, 2, 1, 0}));
        CachedPrefix hit = m.findCachedPrefix(a);
        QCOMPARE(hit.blocks, (Ids{0, 1}));
        // Adopting 2 free cached blocks + 1 new one needs 3 free blocks.
        QCOMPARE(m.blocksNeeded(2, 5, &hit), 3);
        QVERIFY(m.allocateSlots(2, 5, &hit));
        QCOMPARE(table(m, 2), (Ids{0, 1, 3}));
        QCOMPARE(m.pool().freeQueue(), (Ids{2}));
        m.free(2);
        // Now a new, unrelated sequence takes the least recently freed blocks first: 2, then 3,
        // so the cached prefix blocks (freed last-first: 1 then 0) survive longest.
        QCOMPARE(m.pool().freeQueue(), (Ids{2, 3, 1, 0}));
        QVERIFY(m.allocateSlots(3, 4));
        QCOMPARE(table(m, 3), (Ids{2, 3}));
        QCOMPARE(m.findCachedPrefix(a).numTokens, 4);
        QVERIFY(m.allocateSlots(4, 1)); // evicts block 1 (the deeper prefix block) first
        QCOMPARE(table(m, 4), (Ids{1}));
        QCOMPARE(m.findCachedPrefix(a).numTokens, 2);
    }

    void forkSharesAndCopiesOnWrite() {
        KvCacheManager m({.numBlocks = 8, .blockSize = 4});
        QVERIFY(m.allocateSlots(1, 6)); // blocks 0 (full), 1 (2 of 4 used)
        QVERIFY(m.fork(1, 2).isOk());
        QVERIFY(!m.fork(1, 2).isOk()); // child exists
        QVERIFY(!m.fork(9, 3).isOk()); // unknown parent
        QCOMPARE(table(m, 2), (Ids{0, 1}));
        QCOMPARE(m.pool().refCount(1), 2);
        // The child writes position 6 (block 1, shared): it gets a private copy.
        auto copy = m.prepareWrite(2, 6);
        QVERIFY(copy.isOk());
        QVERIFY(copy->has_value());
        QCOMPARE((*copy)->src, 1);
        QCOMPARE((*copy)->dst, 2);
        QCOMPARE(table(m, 2), (Ids{0, 2}));
        QCOMPARE(m.pool().refCount(1), 1);
        // The parent now owns block 1 alone: no copy.
        auto none = m.prepareWrite(1, 6);
        QVERIFY(none.isOk());
        QVERIFY(!none->has_value());
        QVERIFY(!m.prepareWrite(1, 40).isOk()); // no slot there
        m.free(1);
        m.free(2);
        QCOMPARE(m.numUsedBlocks(), 0);
    }

    void copyOnWriteFailsCleanlyWhenFull() {
        KvCacheManager m({.numBlocks = 2, .blockSize = 4});
        QVERIFY(m.allocateSlots(1, 6));
        QVERIFY(m.fork(1, 2).isOk());
        auto r = m.prepareWrite(2, 6);
        QVERIFY(!r.isOk());
        QCOMPARE(r.status().code(), hearth::ErrorCode::OutOfMemory);
    }

    void hashesChainOverBlocks() {
        const auto toks = iota(10, 0);
        auto h = hashFullBlocks(toks, 4);
        QCOMPARE(int(h.size()), 2);
        QCOMPARE(h[0], hashBlockTokens(kRootHash, std::span(toks).subspan(0, 4)));
        QCOMPARE(h[1], hashBlockTokens(h[0], std::span(toks).subspan(4, 4)));
        QVERIFY(h[0] != h[1]);
        // Same tokens after a different parent hash differently.
        QVERIFY(hashBlockTokens(1, std::span(toks).subspan(0, 4)) !=
                hashBlockTokens(2, std::span(toks).subspan(0, 4)));
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "test_kv_cache.moc"
