// The --models-dir router on real models (copies of stories260K under several names): several
// stay loaded within a count and a memory budget, the least recently used idle one is unloaded
// first, one in use never is, concurrent first requests load once, keep-alive (the server's and
// Ollama's per request) unloads idle ones, and /api/ps and /v1/models report it all.
#include "../server/http_test_support.h"
#include "gguf_rewrite.h"
#include "test_support.h"

#include "hearth/gguf.h"
#include "hearth/server.h"

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

using namespace hearth;
using namespace hearth::test;
using hearth::server::ModelDirectoryConfig;
using hearth::server::ModelEntry;
using hearth::server::ModelProvider;

namespace {

const char* kRouterModel = "models/stories260K.gguf";

// A folder holding the model under each of `names`, and a router over it that counts its loads.
struct RouterLibrary {
    QTemporaryDir dir;
    std::mutex mu;
    std::vector<std::string> loads; // ids, in order
    std::vector<std::string> lines;

    bool make(std::initializer_list<const char*> names) {
        if (!dir.isValid()) return false;
        const QString src = QString::fromStdString(testDataPath(kRouterModel));
        for (const char* n : names)
            if (!QFile::copy(src, dir.filePath(QString::fromLatin1(n) + QStringLiteral(".gguf")))) return false;
        return true;
    }
    ModelDirectoryConfig config() {
        ModelDirectoryConfig c;
        c.dir = dir.path().toStdString();
        c.engine.contextLength = 128;
        c.engine.maxNumSeqs = 2;
        c.engine.threads = 1;
        c.log = [this](const std::string& line) {
            std::lock_guard<std::mutex> lock(mu);
            lines.push_back(line);
            if (line.rfind("loading ", 0) == 0) {
                const std::string file = line.substr(line.find_last_of('/') + 1);
                loads.push_back(file.substr(0, file.size() - 5));
            }
        };
        return c;
    }
    std::vector<std::string> loadOrder() {
        std::lock_guard<std::mutex> lock(mu);
        return loads;
    }
};

std::vector<std::string> routerLoadedIds(ModelProvider& p) {
    std::vector<std::string> ids;
    for (const ModelEntry& m : p.list())
        if (m.loaded) ids.push_back(m.id);
    return ids;
}

std::optional<ModelEntry> routerEntry(const std::vector<ModelEntry>& list, const std::string& id) {
    for (const ModelEntry& m : list)
        if (m.id == id) return m;
    return std::nullopt;
}

// Acquires `id` and lets it go at once (one request served).
bool useModel(ModelProvider& p, const std::string& id) {
    std::string resolved;
    auto e = p.acquire(id, resolved);
    return e && *e && resolved == id;
}

using RouterIds = std::vector<std::string>;

// A server on a free loopback port that logs nothing.
server::ServerConfig quietServer() {
    server::ServerConfig c;
    c.port = 0;
    c.log = [](const std::string&) {};
    return c;
}

} // namespace

class TestModelRouter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { HEARTH_REQUIRE_TEST_FILE(kRouterModel); }

    void leastRecentlyUsedIdleModelGoesFirst() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta", "gamma"}));
        ModelDirectoryConfig c = lib.config();
        c.maxLoaded = 2;
        auto router = server::makeDirectoryModelProvider(c);
        QVERIFY(useModel(*router, "alpha"));
        QVERIFY(useModel(*router, "beta"));
        QCOMPARE(routerLoadedIds(*router), (RouterIds{"alpha", "beta"}));
        QVERIFY(useModel(*router, "alpha")); // alpha is now the more recent
        QVERIFY(useModel(*router, "gamma")); // two fit: beta, the least recently used, goes
        QCOMPARE(routerLoadedIds(*router), (RouterIds{"alpha", "gamma"}));
        QVERIFY(useModel(*router, "beta")); // then alpha
        QCOMPARE(routerLoadedIds(*router), (RouterIds{"beta", "gamma"}));
        QCOMPARE(lib.loadOrder(), (RouterIds{"alpha", "beta", "gamma", "beta"}));
        // An empty model is the most recently used one; no load.
        std::string resolved;
        QVERIFY(router->acquire("", resolved).isOk());
        QCOMPARE(resolved, std::string("beta"));
        QCOMPARE(lib.loadOrder().size(), size_t(4));
        // Most recently used first.
        const auto loaded = router->loadedModels();
        QCOMPARE(loaded.size(), size_t(2));
        QCOMPARE(loaded[0].entry.id, std::string("beta"));
        QCOMPARE(loaded[1].entry.id, std::string("gamma"));
        QVERIFY(loaded[0].engine && loaded[0].entry.memoryBytes > 0);
    }

    void modelInUseIsNeverUnloadedUnderIt() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta"}));
        ModelDirectoryConfig c = lib.config();
        c.maxLoaded = 1;
        c.waitSeconds = 30;
        auto router = server::makeDirectoryModelProvider(c);
        std::string id;
        auto acquired = router->acquire("alpha", id);
        QVERIFY(acquired.isOk());
        std::shared_ptr<Engine> held = *acquired;
        acquired = Status(ErrorCode::Cancelled, "moved");
        QCOMPARE(routerEntry(router->list(), "alpha")->activeRequests, 1);
        auto beta = std::async(std::launch::async, [&] {
            std::string r;
            return router->acquire("beta", r);
        });
        // beta waits while alpha is held: alpha stays loaded and still serves.
        QCOMPARE(beta.wait_for(std::chrono::milliseconds(400)), std::future_status::timeout);
        QCOMPARE(routerLoadedIds(*router), RouterIds{"alpha"});
        QVERIFY(!routerEntry(router->list(), "alpha")->expiresAt); // in use: no expiry
        held.reset(); // the request ends
        QCOMPARE(beta.wait_for(std::chrono::seconds(20)), std::future_status::ready);
        auto b = beta.get();
        QVERIFY2(b.isOk(), b.isOk() ? "" : b.status().toString().c_str());
        QCOMPARE(routerLoadedIds(*router), RouterIds{"beta"});

        // With no room coming free in time, the load gives up with Busy, and the held model stays.
        c.waitSeconds = 1;
        auto impatient = server::makeDirectoryModelProvider(c);
        auto a = impatient->acquire("alpha", id);
        QVERIFY(a.isOk());
        const auto t0 = std::chrono::steady_clock::now();
        auto refused = impatient->acquire("beta", id);
        QVERIFY(!refused.isOk());
        QCOMPARE(refused.status().code(), ErrorCode::Busy);
        QVERIFY(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(900));
        QCOMPARE(routerLoadedIds(*impatient), RouterIds{"alpha"});
        // Stopping ends a wait at once.
        auto waiting = std::async(std::launch::async, [&] {
            std::string r;
            return impatient->acquire("beta", r);
        });
        QCOMPARE(waiting.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
        impatient->stopWaiting();
        QCOMPARE(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        QCOMPARE(waiting.get().status().code(), ErrorCode::Busy);
    }

    void memoryBudgetDecidesWhatStays() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta"}));
        ModelDirectoryConfig c = lib.config();
        c.engine.kvMemoryBytes = 1 << 20;
        uint64_t one = 0;
        {
            auto probe = server::makeDirectoryModelProvider(c);
            QVERIFY(useModel(*probe, "alpha"));
            one = routerEntry(probe->list(), "alpha")->memoryBytes;
        }
        // The file's bytes and the K/V cache.
        QVERIFY2(one > uint64_t(QFileInfo(lib.dir.filePath("alpha.gguf")).size()) + (1 << 19), std::to_string(one).c_str());
        c.memoryBudgetBytes = one * 8 / 5; // one model fits, two do not
        auto router = server::makeDirectoryModelProvider(c);
        QVERIFY(useModel(*router, "alpha"));
        QVERIFY(useModel(*router, "beta"));
        QCOMPARE(routerLoadedIds(*router), RouterIds{"beta"});
        c.memoryBudgetBytes = one / 2; // not even one
        auto small = server::makeDirectoryModelProvider(c);
        std::string id;
        auto refused = small->acquire("alpha", id);
        QVERIFY(!refused.isOk());
        QCOMPARE(refused.status().code(), ErrorCode::OutOfMemory);
        QVERIFY2(refused.status().message().find("memory budget") != std::string::npos,
                 refused.status().message().c_str());
        QVERIFY(routerLoadedIds(*small).empty());
    }

    void concurrentFirstRequestsLoadOnce() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha"}));
        auto router = server::makeDirectoryModelProvider(lib.config());
        std::vector<std::future<Result<std::shared_ptr<Engine>>>> requests;
        for (int i = 0; i < 6; ++i)
            requests.push_back(std::async(std::launch::async, [&] {
                std::string r;
                return router->acquire("alpha", r);
            }));
        std::vector<std::shared_ptr<Engine>> engines;
        for (auto& f : requests) {
            auto e = f.get();
            QVERIFY(e.isOk());
            engines.push_back(*e);
        }
        for (const auto& e : engines) QCOMPARE(e.get(), engines[0].get());
        QCOMPARE(lib.loadOrder(), RouterIds{"alpha"});
        QCOMPARE(routerEntry(router->list(), "alpha")->activeRequests, 6);
        engines.clear();
        QCOMPARE(routerEntry(router->list(), "alpha")->activeRequests, 0);
    }

    void keepAliveUnloadsIdleModels() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta"}));
        ModelDirectoryConfig c = lib.config();
        c.ttlSeconds = 1;
        auto router = server::makeDirectoryModelProvider(c);
        std::string id;
        {
            auto a = router->acquire("alpha", id);
            QVERIFY(a.isOk());
            router->setKeepAlive("alpha", -1); // this request asks for it to stay
        }
        QVERIFY(useModel(*router, "beta")); // the server's TTL: 1 s
        const auto b = routerEntry(router->list(), "beta");
        QVERIFY(b && b->expiresAt);
        QVERIFY(*b->expiresAt <= std::chrono::system_clock::now() + std::chrono::seconds(2));
        QVERIFY(!routerEntry(router->list(), "alpha")->expiresAt); // kept
        QTRY_VERIFY_WITH_TIMEOUT(routerLoadedIds(*router) == RouterIds{"alpha"}, 10000);
        // keep_alive 0: unloaded as soon as the request holding it ends, not before.
        {
            auto a = router->acquire("alpha", id);
            QVERIFY(a.isOk());
            router->setKeepAlive("alpha", 0);
            QTest::qWait(400);
            QCOMPARE(routerLoadedIds(*router), RouterIds{"alpha"});
        }
        QTRY_VERIFY_WITH_TIMEOUT(routerLoadedIds(*router).empty(), 5000);
        // unload() of a model not loaded does not load it.
        QVERIFY(!router->unload("beta"));
        QVERIFY(routerLoadedIds(*router).empty());
        QCOMPARE(lib.loadOrder(), (RouterIds{"alpha", "beta"})); // alpha stayed loaded throughout
    }

    void ollamaAndOpenAiRoutesReportTheRouter() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta"}));
        ModelDirectoryConfig c = lib.config();
        server::Server srv(quietServer());
        QVERIFY(srv.start().isOk());
        srv.setModelProvider(server::makeDirectoryModelProvider(c));
        const int port = srv.port();
        auto ps = [&] { return parse(client(port).Get("/api/ps")->body)["models"]; };
        QCOMPARE(ps().size(), size_t(0));

        auto g = postJson(port, "/api/generate",
                          R"({"model":"alpha:latest","prompt":"Once","stream":false,"keep_alive":"1m","options":{"num_predict":4}})");
        QCOMPARE(g->status, 200);
        auto load = postJson(port, "/api/chat", R"({"model":"beta","messages":[]})");
        QCOMPARE(load->status, 200);
        QCOMPARE(parse(load->body)["done_reason"].get<std::string>(), std::string("load"));
        OJson models = ps();
        QCOMPARE(models.size(), size_t(2));
        QCOMPARE(models[0]["name"].get<std::string>(), std::string("beta")); // most recent first
        QCOMPARE(models[1]["name"].get<std::string>(), std::string("alpha"));
        QVERIFY(models[1]["size"].get<uint64_t>() > 1000000);
        // alpha idles out in a minute; beta (no keep_alive, no --ttl) only when room is needed.
        const std::string expires = models[1]["expires_at"].get<std::string>();
        QVERIFY2(expires.rfind("9999", 0) != 0, expires.c_str());
        QVERIFY2(models[0]["expires_at"].get<std::string>().rfind("9999", 0) == 0, models.dump().c_str());

        OJson list = parse(client(port).Get("/v1/models")->body)["data"];
        QCOMPARE(list.size(), size_t(2));
        QCOMPARE(list[0]["status"]["value"].get<std::string>(), std::string("loaded"));
        QVERIFY(list[0]["memory_bytes"].get<uint64_t>() > 0);

        // Ollama's unload: no prompt and keep_alive 0.
        auto unload = postJson(port, "/api/generate", R"({"model":"alpha","keep_alive":0})");
        QCOMPARE(unload->status, 200);
        QCOMPARE(parse(unload->body)["done_reason"].get<std::string>(), std::string("unload"));
        QTRY_COMPARE_WITH_TIMEOUT(ps().size(), size_t(1), 5000);
        QCOMPARE(ps()[0]["name"].get<std::string>(), std::string("beta"));
        list = parse(client(port).Get("/v1/models")->body)["data"];
        QCOMPARE(list[0]["status"]["value"].get<std::string>(), std::string("unloaded"));
        // Unloading what does not exist is a 404, as loading it would be.
        QCOMPARE(postJson(port, "/api/generate", R"({"model":"nothing","keep_alive":0})")->status, 404);
        QCOMPARE(lib.loadOrder(), (RouterIds{"alpha", "beta"}));
        srv.stop();
    }

    // Four models where two fit, 200 requests for them at random from 8 clients: every one is
    // answered, and never more than two are loaded (the router's count, sampled throughout).
    void mixedRequestsStayWithinTheBudget() {
        RouterLibrary lib;
        QVERIFY(lib.make({"m1", "m2", "m3", "m4"}));
        ModelDirectoryConfig c = lib.config();
        c.maxLoaded = 2;
        auto router = server::makeDirectoryModelProvider(c);
        server::Server srv(quietServer());
        QVERIFY(srv.start().isOk());
        srv.setModelProvider(router);
        const int port = srv.port();
        std::atomic<bool> done{false};
        std::atomic<int> mostLoaded{0}, samples{0};
        std::thread sampler([&] {
            while (!done) {
                int n = 0;
                for (const ModelEntry& m : router->list()) n += m.loaded;
                mostLoaded = std::max(mostLoaded.load(), n);
                ++samples;
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        std::atomic<int> ok{0};
        std::vector<std::string> failures;
        std::mutex failMu;
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<std::thread> clients;
        for (int k = 0; k < 8; ++k)
            clients.emplace_back([&, k] {
                uint32_t x = 2463534242u + uint32_t(k) * 977u;
                for (int i = 0; i < 25; ++i) {
                    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
                    const std::string model = "m" + std::to_string(1 + x % 4);
                    auto r = postJson(port, "/v1/completions",
                                      R"({"model":")" + model + R"(","prompt":"Once","max_tokens":2})");
                    if (r && r->status == 200 && parse(r->body)["model"] == model) {
                        ++ok;
                    } else {
                        std::lock_guard<std::mutex> lock(failMu);
                        failures.push_back(r ? std::to_string(r->status) + " " + r->body : "no answer");
                    }
                }
            });
        for (std::thread& t : clients) t.join();
        done = true;
        sampler.join();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        qInfo("200 requests over 4 models, 2 loaded at most: %zu loads, %.1f s, %d samples",
              lib.loadOrder().size(), seconds, samples.load());
        QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
        QCOMPARE(ok.load(), 200);
        QVERIFY2(mostLoaded <= 2, std::to_string(mostLoaded).c_str());
        QVERIFY(lib.loadOrder().size() >= 4);
        srv.stop();
    }

    // Ollama's /api/copy and /api/delete change the folder; nothing outside it, nothing in use.
    void ollamaCopiesAndDeletesModels() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha"}));
        // a split model of two parts
        QVERIFY(writeSplitCopy(testDataPath(kRouterModel), lib.dir.filePath("story").toStdString(), 30).isOk());
        ModelDirectoryConfig c = lib.config();
        server::Server srv(quietServer());
        QVERIFY(srv.start().isOk());
        auto router = server::makeDirectoryModelProvider(c);
        srv.setModelProvider(router);
        const int port = srv.port();
        auto del = [&](const std::string& body) {
            return client(port).Delete("/api/delete", body, "application/json");
        };
        auto tags = [&] {
            RouterIds names;
            const OJson body = parse(client(port).Get("/api/tags")->body);
            for (const auto& m : body["models"]) {
                names.push_back(m["name"]);
                if (m["size"].get<uint64_t>() < 1000000) names.push_back("(no size)");
            }
            return names;
        };
        { // the names as listed
            std::string all;
            for (const std::string& n : tags()) all += n + " ";
            QVERIFY2((tags() == RouterIds{"alpha", "story-00001-of-00002"}), all.c_str());
        }

        QCOMPARE(postJson(port, "/api/copy", R"({"source":"alpha:latest","destination":"beta"})")->status, 200);
        QCOMPARE(tags(), (RouterIds{"alpha", "beta", "story-00001-of-00002"}));
        auto g = postJson(port, "/api/generate", R"({"model":"beta","prompt":"Once","stream":false,"options":{"num_predict":2}})");
        QCOMPARE(g->status, 200);
        // Refused: an existing name, a path, a split name for a whole file, a missing source.
        for (const char* bad : {R"({"source":"alpha","destination":"beta"})", R"({"source":"alpha","destination":"../x"})",
                                R"({"source":"alpha","destination":"sub/x"})", R"({"source":"alpha","destination":".hidden"})",
                                R"({"source":"alpha","destination":"x-00001-of-00002"})",
                                R"({"source":"alpha","destination":"mmproj-x"})", R"({"source":"alpha"})"}) {
            auto r = postJson(port, "/api/copy", bad);
            QVERIFY2(r->status == 400 && parse(r->body)["error"].is_string(), (std::string(bad) + " " + r->body).c_str());
        }
        QCOMPARE(postJson(port, "/api/copy", R"({"source":"nothing","destination":"y"})")->status, 404);
        QVERIFY(!QFile::exists(lib.dir.path() + QStringLiteral("/../x.gguf")));
        // A split model copies part for part, under a split name of the same count.
        QCOMPARE(postJson(port, "/api/copy", R"({"source":"story-00001-of-00002","destination":"tale"})")->status, 400);
        QCOMPARE(postJson(port, "/api/copy", R"({"source":"story-00001-of-00002","destination":"tale-00001-of-00002"})")->status,
                 200);
        QVERIFY(QFile::exists(lib.dir.filePath("tale-00002-of-00002.gguf")));
        QCOMPARE(postJson(port, "/api/generate", R"({"model":"tale-00001-of-00002","prompt":"Once","stream":false,"options":{"num_predict":2}})")
                     ->status,
                 200);

        // Deleting: the loaded beta goes from /api/ps and from the folder; alpha (same bytes) stays.
        QCOMPARE(parse(client(port).Get("/api/ps")->body)["models"].size(), size_t(2));
        QCOMPARE(del(R"({"model":"beta"})")->status, 200);
        QVERIFY(!QFile::exists(lib.dir.filePath("beta.gguf")));
        QVERIFY(QFile::exists(lib.dir.filePath("alpha.gguf")));
        QCOMPARE(parse(client(port).Get("/api/ps")->body)["models"].size(), size_t(1));
        QCOMPARE(del(R"({"name":"tale-00001-of-00002"})")->status, 200);
        QVERIFY(!QFile::exists(lib.dir.filePath("tale-00002-of-00002.gguf")));
        QCOMPARE(tags(), (RouterIds{"alpha", "story-00001-of-00002"}));
        auto missing = del(R"({"model":"beta"})");
        QCOMPARE(missing->status, 404);
        QVERIFY(parse(missing->body)["error"].get<std::string>().find("not found") != std::string::npos);
        QCOMPARE(del(R"({"model":"../alpha"})")->status, 404);
        QCOMPARE(del("[1]")->status, 400);

        // A model in use: its files go, no new request gets it, and it unloads when the request ends.
        std::string id;
        auto held = router->acquire("alpha", id);
        QVERIFY(held.isOk());
        QCOMPARE(del(R"({"model":"alpha"})")->status, 200);
        QVERIFY(!QFile::exists(lib.dir.filePath("alpha.gguf")));
        QCOMPARE(postJson(port, "/api/generate", R"({"model":"alpha","prompt":"Once","stream":false})")->status, 404);
        QCOMPARE(router->loadedModels().size(), size_t(1)); // still loaded, though no longer listed
        QCOMPARE(router->loadedModels()[0].entry.id, std::string("alpha"));
        held = Status(ErrorCode::Cancelled, "released");
        QTRY_VERIFY_WITH_TIMEOUT(router->loadedModels().empty(), 5000);

        // A read-only library refuses both (501), and changes nothing.
        c.allowChanges = false;
        srv.setModelProvider(server::makeDirectoryModelProvider(c));
        QCOMPARE(postJson(port, "/api/copy", R"({"source":"story-00001-of-00002","destination":"z"})")->status, 501);
        QCOMPARE(del(R"({"model":"story-00001-of-00002"})")->status, 501);
        QCOMPARE(tags(), RouterIds{"story-00001-of-00002"});
        srv.stop();
    }

    // A model named as `hearth-cli pull` and Ollama name hub models finds its file through the
    // origins the app recorded for the folder.
    void hubNamesFindTheirFiles() {
        RouterLibrary lib;
        QVERIFY(lib.make({"tiny-q8_0", "tiny-Q4_K_M", "tiny-Q4_K", "other-Q8_0", "mmproj-tiny-F16"}));
        QFile origins(lib.dir.filePath(QStringLiteral(".hearth-origins.json")));
        QVERIFY(origins.open(QIODevice::WriteOnly));
        origins.write(R"({"version":1,"files":{
            "tiny-q8_0.gguf":{"repo":"Owner/Tiny-GGUF","path":"tiny-q8_0.gguf"},
            "tiny-Q4_K_M.gguf":{"repo":"Owner/Tiny-GGUF","path":"tiny-Q4_K_M.gguf"},
            "tiny-Q4_K.gguf":{"repo":"Owner/Tiny-GGUF","path":"tiny-Q4_K.gguf"},
            "mmproj-tiny-F16.gguf":{"repo":"Owner/Tiny-GGUF","path":"mmproj-tiny-F16.gguf"},
            "gone-Q8_0.gguf":{"repo":"Owner/Gone-GGUF","path":"gone-Q8_0.gguf"},
            "other-Q8_0.gguf":{"repo":"Someone/Other-GGUF","path":"other-Q8_0.gguf"}}})");
        origins.close();
        auto router = server::makeDirectoryModelProvider(lib.config());
        auto resolve = [&](const std::string& name) {
            std::string id;
            auto e = router->acquire(name, id);
            return e ? id : std::string("(") + errorCodeName(e.status().code()).data() + ")";
        };
        QCOMPARE(resolve("Owner/Tiny-GGUF:Q8_0"), std::string("tiny-q8_0"));
        QCOMPARE(resolve("hf.co/owner/tiny-gguf:q8_0"), std::string("tiny-q8_0"));
        QCOMPARE(resolve("Owner/Tiny-GGUF:Q4_K"), std::string("tiny-Q4_K")); // not Q4_K_M
        QCOMPARE(resolve("Owner/Tiny-GGUF"), std::string("tiny-Q4_K_M"));   // pull's default
        QCOMPARE(resolve("Owner/Tiny-GGUF:latest"), std::string("tiny-Q4_K_M"));
        QCOMPARE(resolve("huggingface.co/Someone/Other-GGUF"), std::string("other-Q8_0"));
        QCOMPARE(resolve("tiny-Q4_K"), std::string("tiny-Q4_K")); // ids as before
        for (const char* missing : {"Owner/Tiny-GGUF:Q5_K_M", "Owner/Gone-GGUF:Q8_0", "Owner/Tiny-GGUF:F16",
                                    "Nobody/Else:Q8_0", "Owner/Tiny-GGUF:../tiny-q8_0", "tiny"})
            QCOMPARE(resolve(missing), std::string("(not found)"));
        // Each file loaded once: hub names and ids share the loaded model.
        QCOMPARE(lib.loadOrder(), (RouterIds{"tiny-q8_0", "tiny-Q4_K", "tiny-Q4_K_M", "other-Q8_0"}));
        QCOMPARE(router->resolve("hf.co/Owner/Tiny-GGUF:Q4_K"), std::string("tiny-Q4_K")); // without loading
        QCOMPARE(router->resolve("tiny-q8_0.gguf"), std::string("tiny-q8_0"));
        QCOMPARE(router->resolve("Owner/Tiny-GGUF:Q6_K"), std::string());
        // The library routes take the same names.
        QVERIFY(router->copyModel("Owner/Tiny-GGUF:Q8_0", "mine").isOk());
        QVERIFY(QFile::exists(lib.dir.filePath("mine.gguf")));
        QVERIFY(router->removeModel("Someone/Other-GGUF:Q8_0").isOk());
        QVERIFY(!QFile::exists(lib.dir.filePath("other-Q8_0.gguf")));
    }

    // A model loaded by someone else (the app's chat model) is served as pinned: the default,
    // never unloaded or counted here; a copy the router had loaded of it is let go.
    void pinnedModelServesItsName() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha", "beta"}));
        ModelDirectoryConfig c = lib.config();
        c.maxLoaded = 1;
        auto router = server::makeDirectoryModelProvider(c);
        QVERIFY(useModel(*router, "alpha")); // the router's own copy
        EngineConfig ec;
        ec.modelPath = lib.dir.filePath(QStringLiteral("alpha.gguf")).toStdString();
        ec.contextLength = 64;
        auto owned = Engine::create(ec);
        QVERIFY(owned.isOk());
        std::shared_ptr<Engine> app = std::move(*owned);
        router->setPinned("alpha", app);
        auto loaded = router->loadedModels();
        QCOMPARE(loaded.size(), size_t(1));
        QCOMPARE(loaded[0].engine.get(), app.get());
        std::string id;
        for (const char* name : {"alpha", "alpha.gguf", ""}) {
            auto e = router->acquire(name, id);
            QVERIFY(e.isOk());
            QCOMPARE(e->get(), app.get());
            QCOMPARE(id, std::string("alpha"));
        }
        // beta loads beside it although maxLoaded is 1: the pinned model is not counted.
        QVERIFY(useModel(*router, "beta"));
        QCOMPARE(routerLoadedIds(*router), (RouterIds{"alpha", "beta"}));
        QVERIFY(router->unload("alpha")); // known, but its owner keeps it
        QTest::qWait(400);
        QCOMPARE(router->loadedModels()[0].engine.get(), app.get());
        router->setPinned("alpha", nullptr);
        QCOMPARE(routerLoadedIds(*router), RouterIds{"beta"});
        QCOMPARE(lib.loadOrder(), (RouterIds{"alpha", "beta"}));
    }

    void modelOverTheBudgetIsAClearError() {
        RouterLibrary lib;
        QVERIFY(lib.make({"alpha"}));
        ModelDirectoryConfig c = lib.config();
        c.memoryBudgetBytes = 4096;
        server::Server srv(quietServer());
        QVERIFY(srv.start().isOk());
        srv.setModelProvider(server::makeDirectoryModelProvider(c));
        auto r = postJson(srv.port(), "/v1/completions", R"({"model":"alpha","prompt":"Once","max_tokens":2})");
        QCOMPARE(r->status, 500);
        const OJson e = parse(r->body)["error"];
        QCOMPARE(e["code"].get<std::string>(), std::string("model_too_large"));
        QVERIFY2(e["message"].get<std::string>().find("memory budget") != std::string::npos, r->body.c_str());
        auto o = postJson(srv.port(), "/api/generate", R"({"model":"alpha","prompt":"Once","stream":false})");
        QCOMPARE(o->status, 500);
        QVERIFY2(parse(o->body)["error"].get<std::string>().find("memory budget") != std::string::npos, o->body.c_str());
        srv.stop();
    }
};

QTEST_GUILESS_MAIN(TestModelRouter)
#include "test_model_router.moc"
