// A hearth-server on a free loopback port with a FakeEngine behind it (stories260K's vocabulary),
// for the HTTP tests of every API.
#pragma once

#include "fake_engine.h"
#include "http_test_support.h"
#include "test_support.h"

#include "hearth/server.h"

#include <chrono>
#include <memory>
#include <string>

namespace hearth::test {

struct FakeServer {
    std::shared_ptr<FakeEngine> engine;
    std::unique_ptr<server::Server> server;
    int port = 0;
};

inline FakeServer startFakeServer(server::ServerConfig config = {}, int32_t context = 512) {
    FakeServer f;
    f.engine = FakeEngine::create(testDataPath("models/stories260K.gguf"), context);
    config.port = 0;
    if (!config.log) config.log = [](const std::string&) {};
    f.server = std::make_unique<server::Server>(config);
    if (!f.server->start().isOk()) return f;
    f.server->setEngine(f.engine, "fake-model");
    f.port = f.server->port();
    return f;
}

// START_FAKE_SERVER(f[, config[, context]]): skips without stories260K, fails if it cannot start.
#define START_FAKE_SERVER(fixture, ...)                                                            \
    HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");                                          \
    ::hearth::test::FakeServer fixture = ::hearth::test::startFakeServer(__VA_ARGS__);            \
    QVERIFY(fixture.engine);                                                                       \
    QVERIFY(fixture.port > 0)

// Posts `body` (a stream that would run for ever) to `path` and hangs up after `bytes` bytes;
// whether that many came.
inline bool hangUpMidStream(int port, const std::string& path, const std::string& body, size_t bytes) {
    httplib::Client cl("127.0.0.1", port);
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    size_t received = 0;
    req.content_receiver = [&](const char*, size_t n, uint64_t, uint64_t) {
        received += n;
        return received < bytes;
    };
    cl.send(req);
    cl.stop();
    return received >= bytes;
}

// A client that hangs up mid-stream cancels its request (the engine sees the cancel and nothing
// stays live), and the server then answers `nextBody` on `path` with 200.
#define VERIFY_DISCONNECT_CANCELS(fixture, path, streamBody, bytes, nextBody)                      \
    do {                                                                                           \
        fixture.engine->setReply("tick tock ", true);                                              \
        fixture.engine->setTokenDelay(std::chrono::milliseconds(2));                               \
        QVERIFY(::hearth::test::hangUpMidStream(fixture.port, path, streamBody, bytes));          \
        QTRY_VERIFY_WITH_TIMEOUT(!fixture.engine->cancelled().empty(), 10000);                     \
        QTRY_COMPARE_WITH_TIMEOUT(fixture.engine->live(), 0, 10000);                               \
        fixture.engine->setReply("ok");                                                            \
        QCOMPARE(::hearth::test::postJson(fixture.port, path, nextBody)->status, 200);            \
    } while (0)

} // namespace hearth::test
