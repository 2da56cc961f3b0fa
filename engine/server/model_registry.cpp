// The --models-dir provider: lists the .gguf files of a folder (a split model once, by its first
// part; projector files not at all), loads the one a request names (one model at a time, with
// the vision projector found beside it), and unloads a model left idle longer than the TTL.
#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "hearth/server.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

namespace hearth::server {

namespace {

using Clock = std::chrono::steady_clock;

class DirectoryModelProvider final : public ModelProvider {
public:
    explicit DirectoryModelProvider(ModelDirectoryConfig config) : m_config(std::move(config)) {
        if (m_config.ttlSeconds > 0) m_reaper = std::thread([this] { reap(); });
    }
    ~DirectoryModelProvider() override {
        {
            std::lock_guard<std::mutex> lock(m_mu);
            m_stop = true;
        }
        m_cv.notify_all();
        if (m_reaper.joinable()) m_reaper.join();
    }

    std::vector<ModelEntry> list() override {
        std::vector<ModelEntry> out;
        std::lock_guard<std::mutex> lock(m_mu);
        for (const std::string& id : scan()) {
            const bool loaded = m_engine && id == m_loadedId;
            out.push_back({id, loaded, loaded && m_engine->model().vision});
        }
        return out;
    }

    Result<std::shared_ptr<Engine>> acquire(const std::string& model,
                                            std::string& resolvedId) override {
        // One load at a time; requests for the loaded model do not wait on a load.
        std::unique_lock<std::mutex> loadLock(m_loadMu);
        std::string id = model;
        {
            std::lock_guard<std::mutex> lock(m_mu);
            if (id.empty()) id = m_engine ? m_loadedId : m_config.defaultModel;
            if (m_engine && id == m_loadedId) {
                m_lastUsed = Clock::now();
                resolvedId = id;
                return m_engine;
            }
        }
        const std::vector<std::string> ids = scan();
        if (id.empty() && !ids.empty()) id = ids.front();
        // Only names found in the folder are loaded, so a request cannot reach other paths.
        if (std::find(ids.begin(), ids.end(), id) == ids.end())
            return notFound("the model '" + id.substr(0, 200) + "' does not exist");
        {
            std::lock_guard<std::mutex> lock(m_mu);
            m_engine.reset(); // in-flight requests keep the old engine alive until they end
            m_loadedId.clear();
        }
        EngineConfig ec = m_config.engine;
        ec.modelPath = (std::filesystem::path(m_config.dir) / (id + ".gguf")).string();
        if (m_config.findProjectors && ec.projectorPath.empty()) {
            Result<std::string> projector = findProjectorFor(ec.modelPath);
            if (projector && !projector->empty()) {
                ec.projectorPath = *projector;
                log("vision projector for '" + id + "': " + ec.projectorPath);
            }
        }
        log("loading " + ec.modelPath);
        auto engine = Engine::create(ec);
        if (!engine) {
            log("cannot load " + ec.modelPath + ": " + engine.status().toString());
            return Status(ErrorCode::Internal, "cannot load model '" + id + "': " +
                                                   engine.status().message());
        }
        std::shared_ptr<Engine> shared = std::move(*engine);
        std::lock_guard<std::mutex> lock(m_mu);
        m_engine = shared;
        m_loadedId = id;
        m_lastUsed = Clock::now();
        resolvedId = id;
        return shared;
    }

    bool ready() const override { return true; }
    std::shared_ptr<Engine> loaded() const override {
        std::lock_guard<std::mutex> lock(m_mu);
        return m_engine;
    }

private:
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

    // Unloads the model once it has been idle (no request holding it) for the TTL.
    void reap() {
        std::unique_lock<std::mutex> lock(m_mu);
        while (!m_stop) {
            m_cv.wait_for(lock, std::chrono::milliseconds(250));
            if (!m_engine) continue;
            if (m_engine.use_count() > 1) {
                m_lastUsed = Clock::now(); // still serving
                continue;
            }
            if (Clock::now() - m_lastUsed >= std::chrono::seconds(m_config.ttlSeconds)) {
                log("unloading idle model '" + m_loadedId + "'");
                std::shared_ptr<Engine> old = std::move(m_engine);
                m_loadedId.clear();
                lock.unlock();
                old.reset();
                lock.lock();
            }
        }
    }

    ModelDirectoryConfig m_config;
    std::mutex m_loadMu;
    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::shared_ptr<Engine> m_engine;
    std::string m_loadedId;
    Clock::time_point m_lastUsed = Clock::now();
    bool m_stop = false;
    std::thread m_reaper;
};

} // namespace

std::shared_ptr<ModelProvider> makeDirectoryModelProvider(ModelDirectoryConfig config) {
    return std::make_shared<DirectoryModelProvider>(std::move(config));
}

} // namespace hearth::server
