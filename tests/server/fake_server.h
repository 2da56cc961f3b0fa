// A hearth-server on a free loopback port with a FakeEngine behind it (stories260K's vocabulary),
// for the HTTP tests of every API.
#pragma once

#include "fake_engine.h"
#include "test_support.h"

#include "hearth/server.h"

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
    config.log = [](const std::string&) {};
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

} // namespace hearth::test
