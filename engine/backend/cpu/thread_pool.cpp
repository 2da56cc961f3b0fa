// The persistent worker threads behind ThreadPool::parallelFor: workers spin briefly for the next
// job (prefetching the hinted range meanwhile), then sleep on a condition variable; shrinking
// chunks are claimed from an atomic counter; the caller prefetches its hint while it waits.
#include "backend/cpu/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hearth::cpu {

namespace {

// True while this thread runs chunks of some pool's job: a nested parallelFor then runs inline.
thread_local bool tl_insideJob = false;

// Brings the cache line at p toward this core (into L2 at least); never faults.
inline void prefetchLine(const uint8_t* p) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1);
#else
    __builtin_prefetch(p, 0, 2);
#endif
}

// Prefetches up to four lines of a hint range, advancing it.
inline void prefetchSome(const uint8_t*& p, size_t& left) {
    for (int l = 0; l < 4 && left >= 64; ++l, p += 64, left -= 64) prefetchLine(p);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Polls before a worker sleeps (and before a waiting caller yields): ~5 ms at Zen 4's ~20 ns
// pause. Decode's jobs come every few microseconds, but a virtual CPU here stops for 30-60 µs
// about a thousand times a second, and waking a sleeper (or returning from a yield) costs more
// than that again: decode steps got shorter with each step up measured (4k -> 16k -> 64k -> 256k
// polls: 1.1%, 0.9%, 1.0%, alternating steps in one process).
constexpr int kSpinIterations = 256000;

} // namespace

ThreadPool::ThreadPool(int nThreads) : m_nThreads(nThreads < 1 ? 1 : nThreads) {
    m_workers.reserve(size_t(m_nThreads - 1));
    for (int i = 1; i < m_nThreads; ++i) m_workers.emplace_back([this, i] { workerMain(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop.store(true, std::memory_order_release);
    }
    m_wake.notify_all();
    for (auto& t : m_workers) t.join();
}

// The generation counter is odd while a job is open. A worker joins a job by registering in
// m_active and then re-checking that the same job is still open; the caller closes the job once
// every chunk is claimed and waits only for registered workers. So a worker that the OS did not
// schedule in time never holds the caller up, and a late one never touches the next job's fields.
void ThreadPool::run(int64_t n, int64_t grain, RawFn fn, void* ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (m_nThreads <= 1 || n <= grain || tl_insideJob) {
        fn(ctx, 0, n);
        return;
    }
    std::lock_guard<std::mutex> call(m_callMutex);
    m_fn = fn;
    m_ctx = ctx;
    m_n = n;
    m_grain = grain;
    m_next.store(0, std::memory_order_relaxed);
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_generation.fetch_add(1, std::memory_order_acq_rel); // odd: open
    }
    m_wake.notify_all();

    tl_insideJob = true;
    workLoop();
    tl_insideJob = false;
    m_generation.fetch_add(1); // even: closed, every chunk is claimed
    // Waiting for the workers' last chunks: the prefetchWhileWaiting range first, if any.
    const uint8_t* hint = m_waitPtr.exchange(nullptr, std::memory_order_acquire);
    size_t hintLeft = hint ? m_waitBytes.load(std::memory_order_relaxed) : 0;
    for (int spins = 0; m_active.load() != 0;) {
        if (hintLeft >= 64) { // prefetching is not idling: it does not count as a spin
            prefetchSome(hint, hintLeft);
            continue;
        }
        if (spins++ < kSpinIterations) cpuRelax();
        else std::this_thread::yield();
    }
}

// Chunks shrink as the job drains (guided scheduling): each claim takes a 1/(2·threads) share of
// what is left, at least the grain. Big first chunks keep the claims few; small last ones keep
// the threads finishing together. (Fixed chunks of a quarter of a thread's share could leave one
// thread running a whole chunk alone; guided chunks with the repacked matMul's finer grain
// streamed the 1B decode's weights 3-4% faster in bench_decode_stream.)
void ThreadPool::workLoop() {
    int64_t begin = m_next.load(std::memory_order_relaxed);
    for (;;) {
        if (begin >= m_n) return;
        const int64_t size = claimSize(m_n - begin, m_grain);
        if (!m_next.compare_exchange_weak(begin, begin + size, std::memory_order_relaxed)) continue;
        m_fn(m_ctx, begin, begin + size);
        begin = m_next.load(std::memory_order_relaxed);
    }
}

void ThreadPool::workerMain(int /*index*/) {
    uint64_t seen = 0;
    auto openJob = [&] {
        const uint64_t g = m_generation.load(std::memory_order_acquire);
        return (g & 1) != 0 && g != seen;
    };
    const uint8_t* hint = nullptr; // prefetchWhileIdle's range, taken while spinning
    size_t hintLeft = 0;
    for (;;) {
        for (int spins = 0; !openJob() && spins < kSpinIterations; ++spins) {
            if (m_stop.load(std::memory_order_acquire)) return;
            if (m_hintPtr.load(std::memory_order_relaxed)) {
                hint = m_hintPtr.exchange(nullptr, std::memory_order_acquire);
                hintLeft = m_hintBytes.load(std::memory_order_relaxed);
            }
            if (hint && hintLeft >= 64) { // a few lines, then look for a job again; not a spin
                prefetchSome(hint, hintLeft);
                --spins;
                continue;
            }
            cpuRelax();
        }
        hintLeft = 0; // a job opened (or the worker sleeps): the hint is stale
        if (!openJob()) {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_wake.wait(lock, [&] { return m_stop.load(std::memory_order_acquire) || openJob(); });
            if (m_stop.load(std::memory_order_acquire)) return;
        }
        const uint64_t gen = m_generation.load(std::memory_order_acquire);
        seen = gen;
        if ((gen & 1) == 0) continue;
        m_active.fetch_add(1); // seq_cst with the caller's close: one of us sees the other
        if (m_generation.load() == gen) { // still the same open job
            tl_insideJob = true;
            workLoop();
            tl_insideJob = false;
        }
        m_active.fetch_sub(1, std::memory_order_release);
    }
}

} // namespace hearth::cpu
