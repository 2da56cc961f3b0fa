// Helpers for the tokenizer tests: small vocabularies written as in-memory GGUF files, and
// reading llama.cpp's tokenizer test vectors.
#pragma once

#include "hearth/gguf.h"
#include "hearth/tokenizer.h"
#include "tokenizer/byte_level.h"

#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace hearth::test {

// A vocabulary to write as GGUF metadata. Empty optional arrays are left out of the file.
struct VocabSpec {
    std::string model = "gpt2";
    std::optional<std::string> pre = std::string("gpt-2");
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    std::optional<std::vector<std::string>> merges;
    std::function<void(gguf::Writer&)> extra; // more keys, or replacements

    int32_t add(std::string text, int32_t type = 1, float score = 0.0f) {
        tokens.push_back(std::move(text));
        types.push_back(type);
        scores.push_back(score);
        return static_cast<int32_t>(tokens.size() - 1);
    }
};

inline gguf::Writer writerFor(const VocabSpec& spec) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string("llama"));
    w.set("tokenizer.ggml.model", gguf::Value::string(spec.model));
    if (spec.pre) w.set("tokenizer.ggml.pre", gguf::Value::string(*spec.pre));
    w.set("tokenizer.ggml.tokens", gguf::Value::stringArray(spec.tokens));
    if (!spec.scores.empty()) w.set("tokenizer.ggml.scores", gguf::Value::f32Array(spec.scores));
    if (!spec.types.empty()) w.set("tokenizer.ggml.token_type", gguf::Value::i32Array(spec.types));
    if (spec.merges) w.set("tokenizer.ggml.merges", gguf::Value::stringArray(*spec.merges));
    if (spec.extra) spec.extra(w);
    return w;
}

// Writes the file to memory and loads a tokenizer from it (the buffer may go away after:
// the tokenizer keeps its own copy of everything).
inline Result<tokenizer::Tokenizer> loadTokenizer(const gguf::Writer& w) {
    HEARTH_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, w.writeToMemory());
    HEARTH_ASSIGN_OR_RETURN(gguf::File file, gguf::File::fromMemory(bytes.data(), bytes.size()));
    return tokenizer::Tokenizer::fromGguf(file);
}

inline Result<tokenizer::Tokenizer> loadTokenizer(const VocabSpec& spec) {
    return loadTokenizer(writerFor(spec));
}

// A byte-level BPE vocabulary whose first 256 tokens are the byte stand-ins, in byte order
// (so token id b is byte b).
inline VocabSpec byteLevelVocab(std::optional<std::string> pre = std::string("gpt-2")) {
    VocabSpec spec;
    spec.model = "gpt2";
    spec.pre = std::move(pre);
    for (int b = 0; b < 256; ++b) spec.add(std::string(tokenizer::byteToUtf8(uint8_t(b))));
    spec.merges = std::vector<std::string>{};
    return spec;
}

// An SPM vocabulary: <unk> <s> </s>, then byte tokens <0x00>..<0xFF> (ids 3..258).
inline VocabSpec spmVocab(bool withByteTokens = true) {
    VocabSpec spec;
    spec.model = "llama";
    spec.pre = std::nullopt;
    spec.add("<unk>", 2);
    spec.add("<s>", 3);
    spec.add("</s>", 3);
    if (withByteTokens) {
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            spec.add(name, 6);
        }
    }
    return spec;
}

inline int32_t spmByteToken(uint8_t b) { return 3 + b; }

// A WordPiece vocabulary: [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..4, named by the id keys as
// converted BERT files do), then whatever the test adds.
inline VocabSpec wpmVocab() {
    VocabSpec spec;
    spec.model = "bert";
    spec.pre = std::string("bert-bge");
    for (const char* name : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) spec.add(name, 3);
    spec.extra = [](gguf::Writer& w) {
        w.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(0));
        w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(1));
        w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(2));
        w.set("tokenizer.ggml.seperator_token_id", gguf::Value::u32(3));
    };
    return spec;
}

// The U+2581 space mark SPM vocabularies use.
inline std::string spmSpace() { return "\xE2\x96\x81"; }

inline std::string readWholeFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// The texts of a llama.cpp-style .inp file: cases separated by "\n__ggml_vocab_test__\n".
inline std::vector<std::string> splitTestCases(const std::string& inp) {
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    while (pos < inp.size()) {
        const size_t next = inp.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(inp.substr(pos));
            break;
        }
        texts.push_back(inp.substr(pos, next - pos));
        pos = next + sep.size();
    }
    return texts;
}

inline std::vector<int32_t> parseIds(const std::string& line) {
    std::vector<int32_t> ids;
    std::istringstream in(line);
    int32_t id;
    while (in >> id) ids.push_back(id);
    return ids;
}

inline std::string idsString(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

struct TokenizerVector {
    std::string text;
    std::vector<int32_t> ids;
};

// llama.cpp's test vectors for X.gguf: X.gguf.inp (see splitTestCases) and X.gguf.out, one
// line of ids per case. `caseCount` receives the number of cases in the .inp file (more than
// the vectors returned when the .out file is short).
inline std::vector<TokenizerVector> readTokenizerVectors(const std::string& vocabPath,
                                                         size_t* caseCount = nullptr) {
    const std::vector<std::string> texts = splitTestCases(readWholeFile(vocabPath + ".inp"));
    if (caseCount) *caseCount = texts.size();
    std::istringstream lines(readWholeFile(vocabPath + ".out"));
    std::vector<TokenizerVector> vectors;
    std::string line;
    for (const std::string& text : texts) {
        if (!std::getline(lines, line)) break;
        vectors.push_back({text, parseIds(line)});
    }
    return vectors;
}

} // namespace hearth::test
