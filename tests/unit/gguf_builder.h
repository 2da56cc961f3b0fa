// Builds raw GGUF bytes by hand for tests, including deliberately malformed files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hearth::test {

class GgufBytes {
public:
    template <typename T> GgufBytes& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof v);
        return *this;
    }
    GgufBytes& str(const std::string& s) {
        put<uint64_t>(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    GgufBytes& header(uint64_t nTensors, uint64_t nKv, uint32_t version = 3) {
        bytes.insert(bytes.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(nTensors).put<uint64_t>(nKv);
    }
    GgufBytes& kvU32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put(v); }
    GgufBytes& kvStr(const std::string& key, const std::string& v) {
        return str(key).put<uint32_t>(8).str(v);
    }
    // Tensor info: name, dims, type id, offset.
    GgufBytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                      uint64_t offset) {
        str(name).put<uint32_t>(uint32_t(ne.size()));
        for (uint64_t d : ne) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    GgufBytes& padTo(size_t align) {
        while (bytes.size() % align) bytes.push_back(0);
        return *this;
    }
    GgufBytes& zeros(size_t n) {
        bytes.insert(bytes.end(), n, 0);
        return *this;
    }
    std::vector<uint8_t> bytes;
};

} // namespace hearth::test
