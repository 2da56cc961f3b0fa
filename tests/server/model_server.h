// A server on a real engine for the tests that talk HTTP to a real model (stories260K): the engine
// made from a config, a quiet server on a free loopback port serving it under a name.
#pragma once

#include "hearth/engine.h"
#include "hearth/server.h"

#include <memory>
#include <string>

namespace hearth::test {

struct ModelServer {
    std::shared_ptr<Engine> engine;
    std::unique_ptr<server::Server> server;
    int port = 0;
    std::string error; // why it did not start (empty when it did)
};

inline ModelServer startModelServer(const EngineConfig& config, const std::string& name) {
    ModelServer m;
    auto e = Engine::create(config);
    if (!e) {
        m.error = e.status().toString();
        return m;
    }
    m.engine = std::move(*e);
    server::ServerConfig c;
    c.port = 0;
    c.log = [](const std::string&) {};
    m.server = std::make_unique<server::Server>(c);
    if (Status s = m.server->start(); !s.isOk()) {
        m.error = s.toString();
        return m;
    }
    m.server->setEngine(m.engine, name);
    m.port = m.server->port();
    return m;
}

} // namespace hearth::test
