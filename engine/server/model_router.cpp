// The --models-dir provider: a router over the .gguf files of a folder (a split model once, by
// its first part; projector files not at all) that keeps several models loaded within a count
// and a memory budget, loads the one a request names on first use (one load at a time),
// unloads the least recently used idle model to make room, and unloads idle models after their
// keep-alive. A model is "in use" while a request holds the engine pointer acquire() returned.
// Requests name a model by its file name without .gguf, or as a hub model (library_names.h).
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/projector.h"
#include "hearth/server.h"
#include "server/library_names.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

struct RouterState;

// One loaded model.
struct Resident {
    std::weak_ptr<RouterState> state;
    std::string id;
    std::shared_ptr<Engine> engine;
    uint64_t bytes = 0;
    int active = 0;           // requests holding it (leases alive)
    bool draining = false;    // chosen to make room: new requests wait for the load instead
    bool deleted = false;     // its files are gone: no new requests, unloaded once idle
    Clock::time_point lastUsed;
    double keepAliveSeconds;  // once idle: < 0 never unloaded by time, 0 at once
    ~Resident();
};

// What the router and its leases share, so that a request outliving the router is harmless.
struct RouterState {
    std::mutex mu;
    std::condition_variable cv; // a lease ended, a keep-alive changed, or stopping
    std::map<std::string, std::shared_ptr<Resident>> resident;
    std::string loading; // the id being loaded now, "" when none
    bool stopping = false;
    // Engines loaded and not yet destroyed: one unloaded may still be going away on the thread
    // of the request that held it last, and its memory is free only once it is gone.
    std::atomic<int> engines{0};
};

Resident::~Resident() {
    engine.reset(); // the model's memory goes here
    if (std::shared_ptr<RouterState> s = state.lock()) {
        --s->engines;
        s->cv.notify_all();
    }
}

// A request's hold on a resident model: its end makes the model idle (and may let a waiting
// load evict it, or the reaper unload it).
struct Lease {
    std::weak_ptr<RouterState> state;
    std::shared_ptr<Resident> resident; // keeps the engine alive while held
    ~Lease() {
        if (std::shared_ptr<RouterState> s = state.lock()) {
            {
                std::lock_guard<std::mutex> lock(s->mu);
                --resident->active;
                resident->lastUsed = Clock::now();
            }
            s->cv.notify_all();
        }
    }
};

// A request may name a file with its extension: "model.gguf" is the model "model".
std::string withoutExtension(const std::string& name) {
    return name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0 ? name.substr(0, name.size() - 5) : name;
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// Bytes of a model's files: every part of a split model.
uint64_t fileBytes(const std::string& path) {
    std::error_code ec;
    const auto split = gguf::parseSplitName(path);
    if (!split) {
        const auto n = std::filesystem::file_size(path, ec);
        return ec ? 0 : uint64_t(n);
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < split->count; ++i) {
        const auto n = std::filesystem::file_size(gguf::splitPartPath(split->prefix, i, split->count), ec);
        if (!ec) total += uint64_t(n);
    }
    return total;
}

// The K/V cache and recurrent state a load of `path` with `ec` will allocate, from the file's
// metadata, sized as the engine sizes them (EngineConfig::kvMemoryBytes, else maxNumSeqs full
// contexts up to a quarter of the available memory, at least one); 0 when the file cannot be read
// (its load will say why).
uint64_t cacheEstimate(const std::string& path, const EngineConfig& ec) {
    auto file = gguf::File::open(path);
    if (!file) return 0;
    auto info = readModelInfo(*file);
    if (!info) return 0;
    const uint32_t trained = info->contextLength ? info->contextLength : 4096;
    const uint32_t ctx = ec.contextLength > 0 ? uint32_t(ec.contextLength) : std::min<uint32_t>(trained, 4096);
    const MemoryEstimate one = estimateMemory(*info, ctx, kvElementType(ec.kvType));
    if (ec.kvMemoryBytes) return ec.kvMemoryBytes + one.stateBytes;
    const uint64_t all = one.kvBytes * uint64_t(std::max(1, ec.maxNumSeqs));
    const uint64_t available = availableSystemMemory();
    const uint64_t kv = available ? std::min(all, std::max(one.kvBytes, available / 4)) : all;
    return kv + one.stateBytes;
}

class ModelRouter final : public ModelProvider {
public:
    explicit ModelRouter(ModelDirectoryConfig config)
        : m_config(std::move(config)), m_state(std::make_shared<RouterState>()) {
        m_config.maxLoaded = std::max(1, m_config.maxLoaded);
        // The budget holds for resident memory only if an unloaded model's buffers leave the
        // process: kept in the allocator's per-thread heaps, they went 20% over it.
        releaseLargeFreesPromptly();
        if (m_config.memoryBudgetBytes == 0) {
            const uint64_t available = availableSystemMemory();
            m_budget = available ? available / 5 * 4 : UINT64_MAX;
        } else {
            m_budget = m_config.memoryBudgetBytes;
        }
        m_reaper = std::thread([this] { reap(); });
    }
    ~ModelRouter() override {
        stopWaiting();
        if (m_reaper.joinable()) m_reaper.join();
        std::map<std::string, std::shared_ptr<Resident>> gone;
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            gone.swap(m_state->resident);
        }
    }

    std::vector<ModelEntry> list() override {
        std::vector<std::string> ids = scan();
        std::vector<ModelEntry> out;
        std::lock_guard<std::mutex> lock(m_state->mu);
        if (m_pinned && std::find(ids.begin(), ids.end(), m_pinnedId) == ids.end()) ids.insert(ids.begin(), m_pinnedId);
        for (const std::string& id : ids) {
            if (m_pinned && id == m_pinnedId) {
                out.push_back({id, true, m_pinned->model().vision});
                out.back().fileBytes = fileBytes(pathOf(id));
                continue;
            }
            auto it = m_state->resident.find(id);
            out.push_back(it == m_state->resident.end() ? ModelEntry{id} : entryOf(*it->second));
            out.back().loading = m_state->loading == id;
            out.back().fileBytes = fileBytes(pathOf(id));
        }
        return out;
    }

    std::vector<LoadedModel> loadedModels() override {
        std::vector<LoadedModel> out;
        std::lock_guard<std::mutex> lock(m_state->mu);
        for (const auto& [id, r] : m_state->resident) out.push_back({entryOf(*r), r->engine});
        std::sort(out.begin(), out.end(), [&](const LoadedModel& a, const LoadedModel& b) {
            return m_state->resident.at(a.entry.id)->lastUsed > m_state->resident.at(b.entry.id)->lastUsed;
        });
        if (m_pinned) out.insert(out.begin(), LoadedModel{ModelEntry{m_pinnedId, true, m_pinned->model().vision}, m_pinned});
        return out;
    }

    Result<std::shared_ptr<Engine>> acquire(const std::string& model, std::string& resolvedId) override {
        std::string id = withoutExtension(model);
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            if (id.empty()) id = m_pinned ? m_pinnedId : mostRecentLocked().empty() ? m_config.defaultModel : mostRecentLocked();
            // A hub name resolved before goes straight to its model (no folder scan per request).
            const auto known = m_resolved.find(id);
            if (auto held = servingLocked(known == m_resolved.end() ? id : known->second, resolvedId)) return held;
        }
        const std::vector<std::string> ids = scan();
        if (id.empty() && !ids.empty()) id = ids.front();
        // Only names found in the folder are loaded, so a request cannot reach other paths.
        const std::string found = resolveLibraryName(m_config.dir, id, ids);
        if (found.empty()) return notFound("the model '" + id.substr(0, 200) + "' does not exist");
        if (found != id) {
            std::lock_guard<std::mutex> lock(m_state->mu);
            if (m_resolved.size() >= 1024) m_resolved.clear(); // names come from requests: bounded
            m_resolved[id] = found;
            id = found;
            if (auto held = servingLocked(id, resolvedId)) return held;
        }

        // One load at a time: a request for a model another request is loading waits for that
        // load and then finds it resident.
        std::lock_guard<std::mutex> loadLock(m_loadMu);
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            // No other load is making room now: a model it set draining serves again.
            for (auto& [rid, r] : m_state->resident) r->draining = false;
            if (auto held = servingLocked(id, resolvedId)) return held;
        }
        EngineConfig ec = m_config.engine;
        ec.modelPath = pathOf(id);
        if (m_config.findProjectors && ec.projectorPath.empty()) {
            Result<std::string> projector = findProjectorFor(ec.modelPath);
            if (projector && !projector->empty()) {
                ec.projectorPath = *projector;
                log("vision projector for '" + id + "': " + ec.projectorPath);
            }
        }
        const uint64_t files = fileBytes(ec.modelPath) + (ec.projectorPath.empty() ? 0 : fileBytes(ec.projectorPath));
        const uint64_t need = files + cacheEstimate(ec.modelPath, ec);
        if (need > m_budget)
            return Status(ErrorCode::OutOfMemory, "the model '" + id + "' needs about " + mib(need) +
                                                      ", more than the memory budget for loaded models (" +
                                                      mib(m_budget) + ")");
        if (Status room = makeRoom(id, need); !room.isOk()) return room;

        log("loading " + ec.modelPath);
        auto engine = Engine::create(ec);
        std::unique_lock<std::mutex> lock(m_state->mu);
        m_state->loading.clear();
        if (!engine) {
            lock.unlock();
            log("cannot load " + ec.modelPath + ": " + engine.status().toString());
            return Status(ErrorCode::Internal, "cannot load model '" + id + "': " + engine.status().message());
        }
        auto r = std::make_shared<Resident>();
        r->state = m_state;
        ++m_state->engines;
        r->id = id;
        r->engine = std::move(*engine);
        const ModelSummary& s = r->engine->model();
        r->bytes = files + s.kvBytes + s.stateBytes;
        r->lastUsed = Clock::now();
        r->keepAliveSeconds = defaultKeepAlive();
        m_state->resident[id] = r;
        resolvedId = id;
        return leaseLocked(id);
    }

    std::string resolve(const std::string& model) override {
        const std::string name = withoutExtension(model);
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            if (m_pinned && name == m_pinnedId) return name;
        }
        return resolveLibraryName(m_config.dir, name, scan());
    }

    bool ready() const override { return true; }

    std::shared_ptr<Engine> loaded() const override {
        std::lock_guard<std::mutex> lock(m_state->mu);
        if (m_pinned) return m_pinned;
        const std::string id = mostRecentLocked();
        return id.empty() ? nullptr : m_state->resident.at(id)->engine;
    }

    void setKeepAlive(const std::string& id, double seconds) override {
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            auto it = m_state->resident.find(id);
            if (it == m_state->resident.end()) return;
            it->second->keepAliveSeconds = seconds;
        }
        m_state->cv.notify_all();
    }

    bool unload(const std::string& name) override {
        const std::string id = resolveLibraryName(m_config.dir, name, scan());
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            if (m_pinned && id == m_pinnedId) return true; // its owner keeps it: nothing to do
            auto it = m_state->resident.find(id);
            if (it == m_state->resident.end()) return false;
            it->second->keepAliveSeconds = 0;
        }
        m_state->cv.notify_all();
        return true;
    }

    Status removeModel(const std::string& name) override {
        if (!m_config.allowChanges) return readOnly();
        const std::string id = resolveLibraryName(m_config.dir, name, scan());
        if (id.empty()) return notFound("the model '" + name.substr(0, 200) + "' does not exist");
        std::shared_ptr<Resident> gone;
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            auto it = m_state->resident.find(id);
            if (it != m_state->resident.end()) {
                if (it->second->active == 0) { // idle: unloaded now; else when its requests end
                    gone = it->second;
                    m_state->resident.erase(it);
                } else {
                    it->second->deleted = true;
                    it->second->keepAliveSeconds = 0;
                }
            }
        }
        gone.reset();
        // A loaded model keeps its mapped pages; the files go now.
        for (const std::string& file : partsOf(id)) {
            std::error_code ec;
            std::filesystem::remove(file, ec);
            if (ec) return Status(ErrorCode::IoError, "cannot delete " + file + ": " + ec.message());
        }
        log("deleted the model '" + id + "'");
        return Status::ok();
    }

    Status copyModel(const std::string& name, const std::string& to) override {
        if (!m_config.allowChanges) return readOnly();
        const std::string from = resolveLibraryName(m_config.dir, name, scan());
        if (from.empty()) return notFound("the model '" + name.substr(0, 200) + "' does not exist");
        if (Status name = checkNewName(to); !name.isOk()) return name;
        const std::vector<std::string> sources = partsOf(from);
        std::vector<std::string> targets;
        if (const auto split = gguf::parseSplitName(sources.front())) {
            const auto toSplit = gguf::parseSplitName(to + ".gguf");
            if (!toSplit || toSplit->index != 0 || toSplit->count != split->count)
                return invalidArgument("a copy of a split model needs a name like '" +
                                       std::filesystem::path(gguf::splitPartPath("NAME", 0, split->count)).stem().string() +
                                       "'");
            const std::string prefix = (std::filesystem::path(m_config.dir) / toSplit->prefix).string();
            for (uint32_t i = 0; i < split->count; ++i) targets.push_back(gguf::splitPartPath(prefix, i, split->count));
        } else {
            if (gguf::parseSplitName(to + ".gguf"))
                return invalidArgument("the new name '" + to + "' is a split model's part name");
            targets.push_back(pathOf(to));
        }
        std::error_code ec;
        for (const std::string& t : targets)
            if (std::filesystem::exists(t, ec)) return invalidArgument("the model '" + to + "' already exists");
        for (size_t i = 0; i < sources.size(); ++i) {
            // A second name for the same bytes where the file system allows it; else a copy made
            // under a temporary name, so a cut copy never lists as a model.
            std::filesystem::create_hard_link(sources[i], targets[i], ec);
            if (!ec) continue;
            const std::string part = targets[i] + ".part";
            std::filesystem::copy_file(sources[i], part, std::filesystem::copy_options::overwrite_existing, ec);
            if (!ec) std::filesystem::rename(part, targets[i], ec);
            if (ec) {
                std::error_code ignored;
                std::filesystem::remove(part, ignored);
                for (size_t j = 0; j < i; ++j) std::filesystem::remove(targets[j], ignored);
                return Status(ErrorCode::IoError, "cannot copy " + sources[i] + ": " + ec.message());
            }
        }
        log("copied the model '" + from + "' to '" + to + "'");
        return Status::ok();
    }

    bool canPull() const override { return m_config.allowChanges && m_config.puller; }

    Status pullModel(const std::string& name, const std::function<bool(const PullProgress&)>& progress) override {
        if (!m_config.allowChanges) return readOnly();
        if (!m_config.puller)
            return Status(ErrorCode::Unsupported, "this server does not pull models (hearth-server pulls into the "
                                                  "library of --data-dir, with hearth-cli beside it)");
        log("pulling " + name.substr(0, 200));
        Status s = m_config.puller(name, progress);
        log(s.isOk() ? "pulled " + name.substr(0, 200) : "pull of " + name.substr(0, 200) + " failed: " + s.toString());
        return s;
    }

    void setPinned(const std::string& id, std::shared_ptr<Engine> engine) override {
        std::shared_ptr<Resident> twin;
        std::shared_ptr<Engine> previous;
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            previous = std::move(m_pinned);
            m_pinned = std::move(engine);
            m_pinnedId = m_pinned ? id : std::string();
            // A copy of the same model loaded here before is let go: the pinned one serves it now.
            auto it = m_pinned ? m_state->resident.find(id) : m_state->resident.end();
            if (it != m_state->resident.end()) {
                if (it->second->active == 0) {
                    twin = it->second;
                    m_state->resident.erase(it);
                } else {
                    it->second->deleted = true; // no new requests; unloaded when idle
                    it->second->keepAliveSeconds = 0;
                }
            }
        }
        m_state->cv.notify_all();
    }

    void stopWaiting() override {
        {
            std::lock_guard<std::mutex> lock(m_state->mu);
            m_state->stopping = true;
        }
        m_state->cv.notify_all();
    }

private:
    static Status readOnly() {
        return Status(ErrorCode::Unsupported, "the model library of this server is read-only");
    }

    std::string pathOf(const std::string& id) const {
        return (std::filesystem::path(m_config.dir) / (id + ".gguf")).string();
    }

    // The files of the model `id`: every part of a split model.
    std::vector<std::string> partsOf(const std::string& id) const {
        const std::string first = pathOf(id);
        const auto split = gguf::parseSplitName(first);
        if (!split) return {first};
        std::vector<std::string> parts;
        for (uint32_t i = 0; i < split->count; ++i) parts.push_back(gguf::splitPartPath(split->prefix, i, split->count));
        return parts;
    }

    // A name a copy may take: a plain file name (letters, digits, '.', '_', '-'), no projector's.
    static Status checkNewName(const std::string& to) {
        if (to.empty() || to.size() > 200) return invalidArgument("the new name must have 1 to 200 characters");
        for (char ch : to)
            if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-'))
                return invalidArgument("the new name may hold letters, digits, '.', '_' and '-' only");
        if (to.front() == '.' || to.front() == '-') return invalidArgument("the new name must start with a letter or digit");
        if (isProjectorFileName(to + ".gguf")) return invalidArgument("the new name is a vision projector's");
        return Status::ok();
    }

    double defaultKeepAlive() const { return m_config.ttlSeconds > 0 ? double(m_config.ttlSeconds) : -1.0; }

    ModelEntry entryOf(const Resident& r) const {
        ModelEntry e{r.id, true, r.engine->model().vision};
        e.memoryBytes = r.bytes;
        e.activeRequests = r.active;
        if (r.active == 0 && r.keepAliveSeconds >= 0) {
            const auto left = std::chrono::duration_cast<std::chrono::system_clock::duration>(
                r.lastUsed + std::chrono::duration<double>(r.keepAliveSeconds) - Clock::now());
            e.expiresAt = std::chrono::system_clock::now() + left;
        }
        return e;
    }

    std::string mostRecentLocked() const {
        const Resident* best = nullptr;
        for (const auto& [id, r] : m_state->resident)
            if (!best || r->lastUsed > best->lastUsed) best = r.get();
        return best ? best->id : std::string();
    }

    // The pinned engine when `id` names it, else a new hold on the resident `id`, with resolvedId
    // set; null when neither.
    std::shared_ptr<Engine> servingLocked(const std::string& id, std::string& resolvedId) {
        std::shared_ptr<Engine> e = m_pinned && id == m_pinnedId ? m_pinned : leaseLocked(id);
        if (e) resolvedId = id;
        return e;
    }

    // The step buffers `r` holds now, remembered for its next load.
    uint64_t stepBytesLocked(const Resident& r) {
        const uint64_t bytes = r.engine ? r.engine->stats().stepBufferBytes : 0;
        uint64_t& seen = m_stepBytes[r.id];
        seen = std::max(seen, bytes);
        return bytes;
    }

    // A new hold on the resident `id` (the keep-alive back to the default), or null.
    std::shared_ptr<Engine> leaseLocked(const std::string& id) {
        auto it = m_state->resident.find(id);
        if (it == m_state->resident.end() || it->second->draining || it->second->deleted) return nullptr;
        Resident& r = *it->second;
        ++r.active;
        r.lastUsed = Clock::now();
        r.keepAliveSeconds = defaultKeepAlive();
        auto lease = std::make_shared<Lease>();
        lease->state = m_state;
        lease->resident = it->second;
        Engine* engine = r.engine.get();
        return std::shared_ptr<Engine>(std::move(lease), engine); // shares the lease's count
    }

    // Unloads idle models, least recently used first, until `need` more bytes and one more model
    // fit; waits for models in use to come free when that is not enough. On success `id` is
    // marked as loading.
    Status makeRoom(const std::string& id, uint64_t need) {
        const auto deadline = Clock::now() + std::chrono::seconds(std::max(0, m_config.waitSeconds));
        std::unique_lock<std::mutex> lock(m_state->mu);
        for (;;) {
            std::vector<std::shared_ptr<Resident>> evicted;
            for (;;) {
                // Besides its files and caches, each model holds step buffers as large as its
                // largest step so far; the one to load, those it held when last loaded.
                uint64_t used = 0;
                for (const auto& [rid, r] : m_state->resident) used += r->bytes + stepBytesLocked(*r);
                const auto learned = m_stepBytes.find(id);
                const uint64_t steps = learned == m_stepBytes.end() ? 0 : learned->second;
                const bool fits =
                    int(m_state->resident.size()) < m_config.maxLoaded && used + need + steps <= m_budget;
                if (fits) {
                    m_state->loading = id;
                    break;
                }
                std::shared_ptr<Resident> oldest;
                for (const auto& [rid, r] : m_state->resident)
                    if (r->active == 0 && (!oldest || r->lastUsed < oldest->lastUsed)) oldest = r;
                if (!oldest) {
                    // Every model is in use: the least recently used takes no new requests, so
                    // that it comes free however busy the others keep it.
                    std::shared_ptr<Resident> victim;
                    for (const auto& [rid, r] : m_state->resident)
                        if (!victim || r->draining > victim->draining ||
                            (r->draining == victim->draining && r->lastUsed < victim->lastUsed))
                            victim = r;
                    if (victim && !victim->draining) {
                        log("'" + victim->id + "' takes no new requests until it can be unloaded for '" + id + "'");
                        victim->draining = true;
                    }
                    break;
                }
                log("unloading '" + oldest->id + "' (least recently used) to load '" + id + "'");
                m_state->resident.erase(oldest->id);
                evicted.push_back(std::move(oldest));
            }
            const bool ready = m_state->loading == id;
            if (!evicted.empty()) { // engines are destroyed outside the lock
                lock.unlock();
                evicted.clear();
                lock.lock();
            }
            // Before loading, every unloaded engine must be gone (its last request's thread may
            // still hold it for a moment): within the budget means within it in memory too.
            while (ready && m_state->engines.load() > int(m_state->resident.size()) && !m_state->stopping)
                m_state->cv.wait_for(lock, std::chrono::milliseconds(20));
            if (ready) return Status::ok();
            if (m_state->stopping ||
                (m_state->cv.wait_until(lock, deadline) == std::cv_status::timeout && Clock::now() >= deadline)) {
                for (auto& [rid, r] : m_state->resident) r->draining = false;
                if (m_state->stopping) return Status(ErrorCode::Busy, "the server is stopping");
                return Status(ErrorCode::Busy, "cannot load the model '" + id +
                                                   "': every loaded model is in use and no room came free");
            }
        }
    }

    std::vector<std::string> scan() const {
        std::vector<std::string> ids;
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(m_config.dir, ec)) {
            if (!entry.is_regular_file(ec) || entry.path().extension() != ".gguf") continue;
            if (isProjectorFileName(entry.path().filename().string())) continue; // a model's projector
            const auto part = gguf::parseSplitName(entry.path().filename().string());
            if (part && part->index != 0) continue; // loaded with the first part
            ids.push_back(entry.path().stem().string());
        }
        std::sort(ids.begin(), ids.end());
        return ids;
    }

    void log(const std::string& line) const {
        if (m_config.log) m_config.log(line);
    }

    // Unloads each idle model whose keep-alive has run out.
    void reap() {
        std::unique_lock<std::mutex> lock(m_state->mu);
        while (!m_state->stopping) {
            m_state->cv.wait_for(lock, std::chrono::milliseconds(250));
            std::vector<std::shared_ptr<Resident>> expired;
            const auto now = Clock::now();
            for (auto it = m_state->resident.begin(); it != m_state->resident.end();) {
                const Resident& r = *it->second;
                if (r.active == 0 && r.keepAliveSeconds >= 0 &&
                    now - r.lastUsed >= std::chrono::duration<double>(r.keepAliveSeconds)) {
                    log("unloading idle model '" + r.id + "'");
                    expired.push_back(it->second);
                    it = m_state->resident.erase(it);
                } else {
                    ++it;
                }
            }
            if (!expired.empty()) {
                lock.unlock();
                expired.clear();
                lock.lock();
                m_state->cv.notify_all(); // a load waiting for room may go on
            }
        }
    }

    ModelDirectoryConfig m_config;
    uint64_t m_budget = UINT64_MAX;
    std::shared_ptr<RouterState> m_state;
    std::shared_ptr<Engine> m_pinned; // setPinned's (guarded by m_state->mu)
    std::string m_pinnedId;
    std::map<std::string, std::string> m_resolved; // hub names to ids, as last resolved (m_state->mu)
    std::map<std::string, uint64_t> m_stepBytes;  // per model: the most step-buffer memory seen (m_state->mu)
    std::mutex m_loadMu;
    std::thread m_reaper;
};

} // namespace

std::shared_ptr<ModelProvider> makeDirectoryModelProvider(ModelDirectoryConfig config) {
    return std::make_shared<ModelRouter>(std::move(config));
}

} // namespace hearth::server
