// A vocabulary file of 64 made-up tokens: all `synthesizeModel` needs for models that the tests
// never tokenize (graph placement, binding and load errors).
#pragma once

#include "hearth/gguf.h"
#include "hearth/status.h"

#include <string>
#include <vector>

namespace hearth::test {

inline Status writeTinyVocab(const std::string& path) {
    gguf::Writer v;
    v.set("general.architecture", gguf::Value::string("llama"));
    v.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
    std::vector<std::string> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back("t" + std::to_string(i));
    v.set("tokenizer.ggml.tokens", gguf::Value::stringArray(tokens));
    return v.writeFile(path);
}

} // namespace hearth::test
