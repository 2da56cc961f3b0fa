// A real hearth Server on a free loopback port serving one model file: the "remote" that gateway
// and remote-provider tests talk to.
#pragma once

#include "hearth/engine.h"
#include "hearth/server.h"

#include <memory>
#include <string>

namespace hearth::test {

struct LoopbackServer {
    std::shared_ptr<Engine> engine;
    std::unique_ptr<server::Server> server;
    int port() const { return server ? server->port() : 0; }
};

// Loads `modelPath` (one thread, `contextLength` tokens) and serves it as `modelId`, requiring
// `apiKey` when it is not empty. Returns "" on success, else what failed.
inline std::string startLoopbackServer(LoopbackServer& out, const std::string& modelPath, int contextLength,
                                       const std::string& modelId, const std::string& apiKey = {}) {
    EngineConfig ec;
    ec.modelPath = modelPath;
    ec.contextLength = contextLength;
    ec.threads = 1;
    auto engine = Engine::create(ec);
    if (!engine) return engine.status().toString();
    out.engine = std::move(*engine);
    server::ServerConfig sc;
    sc.port = 0;
    sc.apiKey = apiKey;
    sc.log = [](const std::string&) {};
    out.server = std::make_unique<server::Server>(sc);
    if (Status s = out.server->start(); !s.isOk()) return s.toString();
    out.server->setEngine(out.engine, modelId);
    return {};
}

} // namespace hearth::test
