// A small persistent thread pool for the CPU kernels: parallelFor splits an index range into
// chunks that the workers and the calling thread take in turn.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace hearth::cpu {

// Below this many values of work an op runs on the calling thread; above it, split over the pool.
inline constexpr int64_t kParallelValues = 1 << 15;

class ThreadPool {
public:
    // nThreads counts the calling thread: 1 (or less) runs everything inline, N starts N-1
    // workers that live until the pool is destroyed.
    explicit ThreadPool(int nThreads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads taking part in a parallelFor, the caller included.
    int size() const { return m_nThreads; }

    // Calls fn(begin, end) over disjoint chunks covering [0, n), each chunk at least `grain`
    // indices long (except the last), and returns when all chunks are done. The caller works too.
    // No allocation per call. Calls from several threads at once are serialized; a call made
    // from inside fn (nested) runs inline on the calling thread.
    template <typename Fn> void parallelFor(int64_t n, Fn&& fn, int64_t grain = 1) {
        using F = std::remove_reference_t<Fn>;
        run(n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<F*>(ctx))(b, e); },
            const_cast<void*>(static_cast<const void*>(&fn)));
    }

    // Splits [0, n) into at most size() contiguous ranges, one per participant, for work whose
    // partition must not depend on timing. fn(part, begin, end); parts may run in any order.
    template <typename Fn> void parallelParts(int64_t n, Fn&& fn) {
        const int64_t parts = std::min<int64_t>(n, m_nThreads);
        if (parts <= 0) return;
        parallelFor(parts, [&](int64_t pb, int64_t pe) {
            for (int64_t p = pb; p < pe; ++p) fn(p, n * p / parts, n * (p + 1) / parts);
        });
    }

    // How many indices a claim takes when `left` remain of a job with this grain (guided: a
    // 1/(2·size()) share of what is left, at least the grain); the caller claims first.
    int64_t claimSize(int64_t left, int64_t grain) const {
        return std::min(left, std::max(grain, left / (2 * int64_t(m_nThreads))));
    }

    // Asks the workers, once they are idle, to pull [p, p + bytes) toward their caches while they
    // wait for the next job: decode's weights are read once per step, and the gaps between its
    // jobs (norms, RoPE, the KV write) would otherwise leave the memory bus half used. Only a
    // hint: the lines are prefetched, never read, so any address is safe; a job that opens
    // stops it; a later hint replaces one not yet taken.
    void prefetchWhileIdle(const void* p, size_t bytes) {
        m_hintBytes.store(bytes, std::memory_order_relaxed);
        m_hintPtr.store(static_cast<const uint8_t*>(p), std::memory_order_release);
    }
    // The calling thread of the next parallelFor that uses the workers, once its own chunks are
    // done and it waits for theirs, prefetches [p, p + bytes) (say, its first chunk of the job
    // after). A hint as above: safe at any address, replaced by a later one.
    void prefetchWhileWaiting(const void* p, size_t bytes) {
        m_waitBytes.store(bytes, std::memory_order_relaxed);
        m_waitPtr.store(static_cast<const uint8_t*>(p), std::memory_order_release);
    }
    // Whether the last hint is still waiting for an idle worker to take it.
    bool prefetchHintPending() const { return m_hintPtr.load(std::memory_order_acquire) != nullptr; }

private:
    using RawFn = void (*)(void*, int64_t, int64_t);
    void run(int64_t n, int64_t grain, RawFn fn, void* ctx);
    void workLoop();      // runs chunks of the current job until none are left
    void workerMain(int index);

    int m_nThreads = 1;
    std::vector<std::thread> m_workers;

    std::mutex m_callMutex; // one parallelFor at a time
    std::mutex m_mutex;     // guards the wake-up of sleeping workers
    std::condition_variable m_wake;

    // The current job; written by the caller before m_generation is bumped.
    RawFn m_fn = nullptr;
    void* m_ctx = nullptr;
    int64_t m_n = 0;
    int64_t m_grain = 1;
    std::atomic<int64_t> m_next{0};
    std::atomic<int> m_active{0};       // workers registered in the current job
    std::atomic<uint64_t> m_generation{0}; // odd while a job is open
    std::atomic<bool> m_stop{false};
    std::atomic<const uint8_t*> m_hintPtr{nullptr}; // prefetchWhileIdle's range, until taken
    std::atomic<size_t> m_hintBytes{0};
    std::atomic<const uint8_t*> m_waitPtr{nullptr}; // prefetchWhileWaiting's, until a job takes it
    std::atomic<size_t> m_waitBytes{0};
};

} // namespace hearth::cpu
