// Tests of loading tokenizer metadata: every malformed-vocabulary case gives a clear error (or
// a warning where llama.cpp carries on), unknown pre-tokenizers fall back to the default one.
#include "test_tokenizer_support.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::test;
using hearth::tokenizer::Tokenizer;
using hearth::tokenizer::TokenType;
using Ids = std::vector<int32_t>;

namespace {

// Loads a vocabulary that must fail; checks the code and that the message names `mention`.
void expectError(const VocabSpec& spec, ErrorCode code, const std::string& mention) {
    auto t = loadTokenizer(spec);
    QVERIFY2(!t.isOk(), "loading should have failed");
    const std::string message = t.status().toString();
    QVERIFY2(t.status().code() == code, message.c_str());
    QVERIFY2(message.find(mention) != std::string::npos, message.c_str());
    QVERIFY2(message.find('\n') == std::string::npos, "error messages are one line");
}

bool hasWarning(const Tokenizer& t, const std::string& part) {
    for (const std::string& w : t.warnings()) {
        if (w.find(part) != std::string::npos) return true;
    }
    return false;
}

VocabSpec smallBpe() {
    VocabSpec spec = byteLevelVocab();
    spec.add("ab");
    spec.merges = std::vector<std::string>{"a b"};
    return spec;
}

} // namespace

class TestTokenizerLoad : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void missingOrUnsupportedModel() {
        VocabSpec spec = smallBpe();
        spec.model = "t5"; // Unigram (nomic-bert-moe's vocabulary, for one)
        expectError(spec, ErrorCode::Unsupported, "'t5'");
        spec.model = "rwkv";
        expectError(spec, ErrorCode::Unsupported, "tokenizer.ggml.model");

        gguf::Writer w;
        w.set("general.architecture", gguf::Value::string("llama"));
        auto t = loadTokenizer(w);
        QVERIFY(!t.isOk());
        QCOMPARE(t.status().code(), ErrorCode::NotFound);
        QVERIFY(t.status().message().find("tokenizer.ggml.model") != std::string::npos);

        spec = smallBpe();
        spec.extra = [](gguf::Writer& w) { w.set("tokenizer.ggml.model", gguf::Value::u32(1)); };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.model");
    }

    void tokenArrays() {
        VocabSpec spec = smallBpe();
        spec.extra = [](gguf::Writer& w) { (void)w.remove("tokenizer.ggml.tokens"); };
        expectError(spec, ErrorCode::NotFound, "tokenizer.ggml.tokens");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.tokens", gguf::Value::u32Array({1, 2, 3}));
        };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.tokens");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.tokens", gguf::Value::stringArray({}));
        };
        expectError(spec, ErrorCode::InvalidFormat, "empty");
    }

    void scoresAndTypesMustCoverTheTokens() {
        VocabSpec spec = smallBpe();
        spec.scores.pop_back();
        expectError(spec, ErrorCode::InvalidFormat,
                    "tokenizer.ggml.scores has 256 entries for 257");
        spec = smallBpe();
        spec.types.resize(10);
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.token_type has 10 entries");
        spec = smallBpe();
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.scores", gguf::Value::stringArray({"x"}));
        };
        expectError(spec, ErrorCode::InvalidFormat,
                    "tokenizer.ggml.scores has type array of string");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.token_type", gguf::Value::f32Array({1.0f}));
        };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.token_type");
        // Longer arrays are tolerated, with a warning.
        spec = smallBpe();
        spec.scores.push_back(1.0f);
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QVERIFY(hasWarning(*t, "tokenizer.ggml.scores has more entries"));
        // Integer scores are accepted.
        spec = smallBpe();
        spec.extra = [n = spec.tokens.size()](gguf::Writer& w) {
            w.set("tokenizer.ggml.scores", gguf::Value::i32Array(std::vector<int32_t>(n, -3)));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->tokenScore(5), -3.0f);
    }

    void mergesAreValidated() {
        VocabSpec spec = smallBpe();
        spec.merges.reset();
        expectError(spec, ErrorCode::NotFound, "tokenizer.ggml.merges");
        spec.merges = std::vector<std::string>{"a b", "ab"};
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.merges[1] 'ab'");
        spec.merges = std::vector<std::string>{"a b", "ab zz"};
        expectError(spec, ErrorCode::InvalidFormat, "not in the vocabulary: 'zz'");
        spec.merges = std::vector<std::string>{""};
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.merges[0]");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.merges", gguf::Value::u32Array({1}));
        };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.merges has type");
        // A merge whose result is not a token is allowed; the pair falls back to bytes.
        spec = byteLevelVocab();
        spec.merges = std::vector<std::string>{"x y"};
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(*t->encode("xy", false, false), (Ids{'x', 'y'}));
    }

    void badTokens() {
        VocabSpec spec = smallBpe();
        spec.add("ab");
        expectError(spec, ErrorCode::InvalidFormat, "lists 'ab' twice (ids 256 and 257)");
        spec = smallBpe();
        spec.add(std::string(64 * 1024 + 1, 'x'));
        expectError(spec, ErrorCode::InvalidFormat, "is 65537 bytes long");
        // An empty token gets a placeholder name, as in llama.cpp.
        spec = smallBpe();
        const int32_t empty = spec.add("");
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->tokenText(empty), std::string_view("[EMPTY_257]"));
        QVERIFY(hasWarning(*t, "token 257 is empty"));
        // Unknown token_type values load as Undefined; such tokens decode to nothing.
        spec = smallBpe();
        const int32_t odd = spec.add("odd", 42);
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->tokenType(odd), TokenType::Undefined);
        QCOMPARE(t->tokenPiece(odd), std::string());
    }

    void specialIds() {
        VocabSpec spec = spmVocab();
        spec.add("\xE2\x96\x81" "a", 1, -1.0f);
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        // SPM defaults.
        QCOMPARE(t->bos(), 1);
        QCOMPARE(t->eos(), 2);
        QCOMPARE(t->unk(), 0);
        QCOMPARE(t->pad(), tokenizer::kNoToken);
        QVERIFY(t->addBos() && !t->addEos() && t->addSpacePrefix());
        QVERIFY(t->warnings().empty());
        // 0xFFFFFFFF means "none": ignored quietly (stories260K has these), defaults kept.
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(0xFFFFFFFFu));
            w.set("tokenizer.ggml.seperator_token_id", gguf::Value::u32(0xFFFFFFFFu));
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::i32(-1));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->pad(), tokenizer::kNoToken);
        QCOMPARE(t->sep(), tokenizer::kNoToken);
        QCOMPARE(t->bos(), 1);
        QVERIFY(t->warnings().empty());
        // Other out-of-range ids are ignored with a warning.
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(999999));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->eos(), 2);
        QVERIFY(hasWarning(*t, "eos_token_id = 999999 is outside the vocabulary"));
        // Mistyped ids and flags are errors.
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::string("1"));
        };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.bos_token_id has type string");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.add_bos_token", gguf::Value::u32(1));
        };
        expectError(spec, ErrorCode::InvalidFormat, "tokenizer.ggml.add_bos_token");
    }

    void defaultIdsOutsideASmallVocabAreDropped() {
        // BPE's default BOS/EOS id is 11; a vocabulary with fewer tokens has none.
        VocabSpec spec;
        spec.model = "gpt2";
        for (const char* t : {"a", "b", "c"}) spec.add(t);
        spec.merges = std::vector<std::string>{};
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->bos(), tokenizer::kNoToken);
        QCOMPARE(t->eos(), tokenizer::kNoToken);
        QCOMPARE(*t->encode("ab", true, false), (Ids{0, 1}));
        // Asked to add a BOS it does not have: a warning, and no BOS.
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(true));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QVERIFY(!t->addBos());
        QVERIFY(hasWarning(*t, "asks for a BOS token but has none"));
    }

    void unknownPreTokenizerFallsBackToDefault() {
        VocabSpec spec = byteLevelVocab("something-new");
        const int32_t t34 = spec.add("34");
        spec.merges = std::vector<std::string>{"3 4"};
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->preTokenizerName(), std::string("something-new"));
        QVERIFY(hasWarning(*t, "unknown pre-tokenizer 'something-new'; using 'default'"));
        // The default rules cut digit runs in threes ("123" "45"), so 3 and 4 never meet;
        // under GPT-2 rules they are one word and merge.
        QCOMPARE(*t->encode("12345", false, false), (Ids{'1', '2', '3', '4', '5'}));
        spec.pre = "gpt-2";
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(*t->encode("12345", false, false), (Ids{'1', '2', t34, '5'}));
        spec.pre.reset();
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QVERIFY(hasWarning(*t, "tokenizer.ggml.pre is missing"));
        // SPM ignores the pre-tokenizer name.
        VocabSpec spm = spmVocab();
        spm.pre = "whatever";
        t = loadTokenizer(spm);
        QVERIFY(t.isOk());
        QVERIFY(t->warnings().empty());
    }

    // WordPiece: there must be an unknown token; missing [CLS] / [SEP] only stop them being
    // added; add_bos / add_sep / add_eos are overridden (with a warning) as llama.cpp ignores
    // them; the normalizer keys must be booleans.
    void wordPieceVocabularies() {
        VocabSpec spec = wpmVocab();
        auto t = loadTokenizer(spec);
        QVERIFY2(t.isOk(), t.status().toString().c_str());
        QCOMPARE(t->modelType(), tokenizer::ModelType::Wpm);
        QCOMPARE(t->unk(), 1);
        QCOMPARE(t->bos(), 2);
        QCOMPARE(t->sep(), 3);
        QCOMPARE(t->pad(), 0);
        QCOMPARE(t->eos(), tokenizer::kNoToken);
        QVERIFY(t->addBos() && t->addSep() && !t->addEos());
        QCOMPARE(t->warnings().size(), size_t(0));

        // No unknown token: the ids are BERT's defaults (100, 101, 102), outside this vocab.
        spec.extra = nullptr;
        expectError(spec, ErrorCode::InvalidFormat, "no unknown token");
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(77));
        };
        expectError(spec, ErrorCode::InvalidFormat, "unknown_token_id");

        // [UNK] only: loads, adds neither [CLS] nor [SEP], and says so.
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(1));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->bos(), tokenizer::kNoToken);
        QCOMPARE(t->sep(), tokenizer::kNoToken);
        QVERIFY(!t->addBos() && !t->addSep());
        QVERIFY(hasWarning(*t, "BOS token but has none"));
        QVERIFY(hasWarning(*t, "separator token but has none"));
        QCOMPARE(*t->encode("", true, false), Ids{});

        // The file's add_* flags do not change what WordPiece adds.
        spec = wpmVocab();
        const auto ids = spec.extra;
        spec.extra = [ids](gguf::Writer& w) {
            ids(w);
            w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(false));
            w.set("tokenizer.ggml.add_sep_token", gguf::Value::boolean(false));
            w.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(true));
            w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(3));
        };
        t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QVERIFY(t->addBos() && t->addSep() && !t->addEos());
        QCOMPARE(t->eos(), 3);
        QVERIFY(hasWarning(*t, "add_bos_token = false overridden"));
        QVERIFY(hasWarning(*t, "add_sep_token = false overridden"));
        QVERIFY(hasWarning(*t, "add_eos_token = true ignored"));
        QCOMPARE(*t->encode("", true, false), (Ids{2, 3}));

        for (const char* key :
             {"tokenizer.ggml.normalizer.lowercase", "tokenizer.ggml.normalizer.strip_accents",
              "tokenizer.ggml.add_sep_token"}) {
            spec.extra = [ids, key](gguf::Writer& w) {
                ids(w);
                w.set(key, gguf::Value::string("yes"));
            };
            expectError(spec, ErrorCode::InvalidFormat, key);
        }
    }

    void endOfGenerationTokens() {
        VocabSpec spec = byteLevelVocab("llama-bpe");
        const int32_t eot = spec.add("<|eot_id|>", 1); // typed normal: becomes control
        const int32_t endText = spec.add("<|end_of_text|>", 3);
        const int32_t other = spec.add("<|other|>", 3);
        spec.extra = [&](gguf::Writer& w) {
            w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(uint32_t(endText)));
        };
        auto t = loadTokenizer(spec);
        QVERIFY(t.isOk());
        QCOMPARE(t->eot(), eot);
        QCOMPARE(t->tokenType(eot), TokenType::Control);
        QVERIFY(t->isEog(eot) && t->isEog(endText) && !t->isEog(other) && !t->isEog('a'));
        QCOMPARE(t->eogTokens(), (Ids{eot, endText}));
        QVERIFY(hasWarning(*t, "'<|eot_id|>' looks like a control token"));
        // Harmony: "<|end|>" ends a message, not the generation, when return/call exist.
        VocabSpec harmony = byteLevelVocab("gpt-4o");
        const int32_t end = harmony.add("<|end|>", 3);
        const int32_t ret = harmony.add("<|return|>", 3);
        const int32_t call = harmony.add("<|call|>", 3);
        const int32_t channel = harmony.add("<|channel|>", 3);
        t = loadTokenizer(harmony);
        QVERIFY(t.isOk());
        QVERIFY(!t->isEog(end) && t->isEog(ret) && t->isEog(call));
        QCOMPARE(t->tokenType(channel), TokenType::UserDefined);
        QCOMPARE(t->tokenPiece(channel, false), std::string("<|channel|>"));
    }
};

QTEST_GUILESS_MAIN(TestTokenizerLoad)
#include "test_tokenizer_load.moc"
