// Tests on the shared vocabulary files: llama.cpp's tokenizer test vectors (llama-spm,
// llama-bpe, qwen2), the stories260K and llama-2-tiny-random prompts, special-token parsing,
// the other pre-tokenizers, decoding and streaming. Expected ids not taken from the vector
// files came from the reference tokenizer (ref-tokenize.mjs, llama.cpp) and are recorded here.
#include "test_support.h"
#include "test_tokenizer_support.h"
#include "tokenizer/unicode.h"

#include <QtTest>

#include <map>

using namespace hearth;
using namespace hearth::test;
using hearth::tokenizer::DecodeOptions;
using hearth::tokenizer::StreamDecoder;
using hearth::tokenizer::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

const char* const kVocabs[] = {"llama-spm", "llama-bpe", "qwen2"};

QString vocabPath(const char* name) {
    return QStringLiteral("models/ggml-vocab-%1.gguf").arg(QLatin1String(name));
}

// Loaded once per run; the tests skip when the file is absent.
const Tokenizer* vocab(const QString& relative) {
    static std::map<QString, std::optional<Tokenizer>> cache;
    auto it = cache.find(relative);
    if (it == cache.end()) {
        std::optional<Tokenizer> loaded;
        auto file = gguf::File::open(testDataPath(relative));
        if (file) {
            auto t = Tokenizer::fromGguf(*file);
            if (t) loaded = std::move(*t);
            else qWarning("%s: %s", qPrintable(relative), t.status().toString().c_str());
        }
        it = cache.emplace(relative, std::move(loaded)).first;
    }
    return it->second ? &*it->second : nullptr;
}

Ids encode(const Tokenizer& t, std::string_view text, bool addSpecial = false,
           bool parseSpecial = false) {
    auto ids = t.encode(text, addSpecial, parseSpecial);
    return ids ? *ids : Ids{-999};
}

DecodeOptions rawDecode() {
    DecodeOptions o;
    o.cleanSpaces = false;
    return o;
}

} // namespace

#define LOAD_OR_SKIP(var, relative)                                                                \
    HEARTH_REQUIRE_TEST_FILE(relative);                                                            \
    const Tokenizer* var = vocab(relative);                                                        \
    QVERIFY2(var != nullptr, "the vocabulary failed to load")

class TestTokenizerVocab : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void testVectors_data() {
        QTest::addColumn<QString>("path");
        for (const char* name : kVocabs) QTest::newRow(name) << vocabPath(name);
    }

    // All of llama.cpp's test vectors, add_special and parse_special off.
    void testVectors() {
        QFETCH(QString, path);
        LOAD_OR_SKIP(t, path);
        const std::vector<TokenizerVector> vectors = readTokenizerVectors(testDataPath(path));
        QCOMPARE(vectors.size(), size_t(46));
        int passed = 0;
        for (const TokenizerVector& v : vectors) {
            const Ids got = encode(*t, v.text);
            if (got == v.ids) {
                ++passed;
            } else {
                qWarning("text %s\n  got  %s\n  want %s", v.text.c_str(), idsString(got).c_str(),
                         idsString(v.ids).c_str());
            }
        }
        qInfo("%s: %d/%zu test vectors pass", qPrintable(path), passed, vectors.size());
        QCOMPARE(passed, int(vectors.size()));
    }

    void roundTripAndStreaming_data() { testVectors_data(); }

    // decode(encode(x)) == x, and the streaming decoder fed one token at a time releases only
    // valid UTF-8 that adds up to the same text.
    void roundTripAndStreaming() {
        QFETCH(QString, path);
        LOAD_OR_SKIP(t, path);
        int roundTrips = 0;
        const std::vector<TokenizerVector> vectors = readTokenizerVectors(testDataPath(path));
        for (const TokenizerVector& v : vectors) {
            const Ids ids = encode(*t, v.text);
            auto text = t->decode(ids, rawDecode());
            QVERIFY(text.isOk());
            QCOMPARE(*text, v.text);
            ++roundTrips;
            StreamDecoder stream(*t, rawDecode());
            std::string streamed;
            for (int32_t id : ids) {
                auto part = stream.push(id);
                QVERIFY(part.isOk());
                QVERIFY2(tokenizer::isValidUtf8(*part), v.text.c_str());
                streamed += *part;
            }
            streamed += stream.finish();
            QCOMPARE(streamed, *text);
        }
        qInfo("%s: %d/%zu round trips", qPrintable(path), roundTrips, vectors.size());
    }

    void storiesAndTinyRandomPrompts() {
        {
            LOAD_OR_SKIP(t, QStringLiteral("models/stories260K.gguf"));
            QCOMPARE(t->vocabSize(), 512);
            QCOMPARE(encode(*t, "Once upon a time", true), (Ids{1, 403, 407, 261, 378}));
            // Its separator and padding ids are 0xFFFFFFFF: ignored without fuss.
            QCOMPARE(t->sep(), tokenizer::kNoToken);
            QCOMPARE(t->pad(), tokenizer::kNoToken);
            QVERIFY(t->warnings().empty());
        }
        {
            LOAD_OR_SKIP(t, QStringLiteral("models/llama-2-tiny-random.gguf"));
            const Ids ids = encode(*t, "Once upon a time", true);
            QCOMPARE(ids, (Ids{1, 9038, 2501, 263, 931}));
            // llama.cpp keeps the space after the BOS; SentencePiece-style drops it.
            QCOMPARE(*t->decode(ids), std::string(" Once upon a time"));
            DecodeOptions strip;
            strip.stripSpaceAfterBos = true;
            QCOMPARE(*t->decode(ids, strip), std::string("Once upon a time"));
        }
    }

    void specialTokenIds() {
        {
            LOAD_OR_SKIP(t, vocabPath("llama-bpe"));
            QCOMPARE(t->bos(), 128000);
            QCOMPARE(t->eos(), 128001);
            QCOMPARE(t->eot(), 128009); // found by its text, as the reference does
            QVERIFY(t->addBos() && !t->addEos() && !t->addSpacePrefix());
            QVERIFY(t->isEog(128001) && t->isEog(128009) && !t->isEog(128000));
            QCOMPARE(t->modelType(), tokenizer::ModelType::Bpe);
        }
        {
            LOAD_OR_SKIP(t, vocabPath("qwen2"));
            QCOMPARE(t->bos(), 151643);
            QCOMPARE(t->eos(), 151643);
            QCOMPARE(t->eot(), 151645);
            QCOMPARE(t->pad(), 151643);
            QVERIFY(!t->addBos());
            QVERIFY(t->isEog(151643) && t->isEog(151645) && !t->isEog(151644));
        }
        {
            LOAD_OR_SKIP(t, vocabPath("llama-spm"));
            QCOMPARE(t->bos(), 1);
            QCOMPARE(t->eos(), 2);
            QCOMPARE(t->unk(), 0);
            QCOMPARE(t->eot(), tokenizer::kNoToken);
            QVERIFY(t->addBos() && t->addSpacePrefix());
            QCOMPARE(t->modelType(), tokenizer::ModelType::Spm);
            QCOMPARE(t->eogTokens(), (Ids{2}));
        }
    }

    // parse_special on and off; expected ids from the reference tokenizer.
    void parseSpecial() {
        {
            LOAD_OR_SKIP(t, vocabPath("llama-bpe"));
            const std::string text = "<|begin_of_text|>Hello<|eot_id|>";
            QCOMPARE(encode(*t, text, false, true), (Ids{128000, 9906, 128009}));
            QCOMPARE(encode(*t, text, false, false),
                     (Ids{27, 91, 7413, 3659, 4424, 91, 29, 9906, 27, 91, 68, 354, 851, 91, 29}));
            QCOMPARE(encode(*t, "a<|eot_id|>b<|end_of_text|>", false, true),
                     (Ids{64, 128009, 65, 128001}));
            QCOMPARE(encode(*t, "Hello", true, false), (Ids{128000, 9906}));
        }
        {
            LOAD_OR_SKIP(t, vocabPath("qwen2"));
            const std::string text = "<|im_start|>user\nhi<|im_end|>[PAD151650]x";
            QCOMPARE(encode(*t, text, false, true),
                     (Ids{151644, 872, 198, 6023, 151645, 151650, 87}));
            // "[PAD151650]" is user-defined: matched even without parse_special.
            QCOMPARE(encode(*t, text, false, false),
                     (Ids{27, 91, 318, 4906, 91, 29, 872, 198, 6023, 27, 91, 318, 6213, 91, 29,
                          151650, 87}));
            // "</s>" is typed normal but ends generation, so it counts as control.
            QCOMPARE(encode(*t, "<s>Hello</s> world<unk>", false, true),
                     (Ids{44047, 79497, 128247, 1879, 128243, 29}));
            QCOMPARE(encode(*t, "<s>Hello</s> world<unk>", false, false),
                     (Ids{44047, 79497, 522, 82, 29, 1879, 128243, 29}));
        }
        {
            LOAD_OR_SKIP(t, vocabPath("llama-spm"));
            // The space prefix is added again after each special token.
            QCOMPARE(encode(*t, "<s>Hello</s> world<unk>", false, true),
                     (Ids{1, 15043, 2, 29871, 3186, 0}));
            QCOMPARE(encode(*t, "<s>Hello</s> world<unk>", false, false),
                     (Ids{529, 29879, 29958, 10994, 829, 29879, 29958, 3186, 29966, 2960, 29958}));
        }
    }

    void otherPreTokenizers_data() {
        QTest::addColumn<QString>("pre");
        QTest::addColumn<QString>("first");  // ids of kFirst, space separated
        QTest::addColumn<QString>("second"); // ids of kSecond
        QTest::addColumn<QString>("third");  // ids of kThird
        // From the reference, on the llama-bpe vocabulary with tokenizer.ggml.pre replaced.
        QTest::newRow("default") << QStringLiteral("default")
            << QStringLiteral(
                   "9906 4435 6 82 38757 1623 6 50 220 4513 1774 220 18 13 975 271 220 15586 "
                   "12340 220 31282 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 10132 38214 220 6 76 6 1026 64 384 62 72 6 "
                   "67 6 2329 83 220 1318 9992 220 54939 127104 158 30489 27 77");
        QTest::newRow("gpt-2") << QStringLiteral("gpt-2")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 6 50 220 4513 1774 220 18 13 975 271 220 15586 "
                   "12340 29386 66806 30 105180 102158 104008 32179 100256 94 110546 117413 "
                   "865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 10132 38214 364 76 2846 9258 384 62 72 4265 "
                   "2846 8207 3132 9992 220 54939 127104 158 30489 27 77");
        QTest::newRow("deepseek-llm") << QStringLiteral("deepseek-llm")
            << QStringLiteral(
                   "9906 4435 6 82 38757 1623 6 50 220 4513 1774 220 18 13 975 198 198 220 "
                   "15586 12340 29386 2232 978 30 220 102433 102158 220 112699 32179 220 "
                   "109610 110546 117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 19827 201 198 842 256")
            << QStringLiteral(
                   "30707 101495 129 123 220 10132 38214 364 76 6 1026 64 384 62 72 6 67 6 "
                   "2329 83 3132 9992 220 54939 127104 158 30489 27 77");
        QTest::newRow("deepseek-coder") << QStringLiteral("deepseek-coder")
            << QStringLiteral(
                   "9906 4435 6 82 38757 1623 6 50 220 16 17 18 19 20 220 18 13 16 19 198 198 "
                   "220 15586 12340 29386 66806 30 220 102433 102158 220 112699 32179 220 "
                   "109610 110546 117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 19827 201 198 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 16 20 21 38214 364 76 6 1026 64 384 62 72 6 "
                   "67 6 2329 83 3132 16 20 20 220 54939 127104 158 30489 27 77");
        QTest::newRow("falcon") << QStringLiteral("falcon")
            << QStringLiteral(
                   "9906 4435 6 82 38757 1623 6 50 220 4513 1774 220 18 13 975 271 220 15586 "
                   "12340 220 31282 66806 30 105180 102158 104008 32179 100256 94 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 10132 38214 220 6 76 6 1026 64 384 62 72 6 "
                   "67 6 2329 83 220 1318 9992 220 54939 127104 158 30489 27 77");
        QTest::newRow("starcoder") << QStringLiteral("starcoder")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 6 50 220 16 17 18 19 20 220 18 13 16 19 271 220 "
                   "15586 12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 16 20 21 38214 364 76 2846 9258 384 62 72 "
                   "4265 2846 8207 3132 16 20 20 220 54939 127104 158 30489 27 77");
        QTest::newRow("smollm") << QStringLiteral("smollm")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 6 50 220 16 17 18 19 20 220 18 13 16 19 271 220 "
                   "15586 12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 6 "
                   "51 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 16 20 21 38214 364 76 2846 9258 384 62 72 "
                   "4265 2846 8207 3132 16 20 20 220 54939 127104 158 30489 27 77");
        QTest::newRow("gpt-4o") << QStringLiteral("gpt-4o")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 13575 220 4513 1774 220 18 13 975 271 220 15586 "
                   "12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 117413 "
                   "865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 "
                   "17773 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 10132 38214 364 76 2846 9258 384 5431 4265 6 "
                   "2329 83 3132 9992 220 54939 127104 158 30489 27 77");
        QTest::newRow("tekken") << QStringLiteral("tekken")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 13575 220 16 17 18 19 20 220 18 13 16 19 271 220 "
                   "15586 12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 "
                   "17773 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 16 20 21 38214 364 76 6 1026 64 384 5431 "
                   "4265 6 2329 83 3132 16 20 20 220 54939 127104 158 30489 27 77");
        QTest::newRow("qwen2") << QStringLiteral("qwen2")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 13575 220 16 17 18 19 20 220 18 13 16 19 271 220 "
                   "15586 12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 "
                   "17773 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 16 20 21 38214 364 76 2846 9258 384 5431 "
                   "4265 2846 8207 3132 16 20 20 220 54939 127104 158 30489 27 77");
        QTest::newRow("qwen35") << QStringLiteral("qwen35")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 13575 220 16 17 18 19 20 220 18 13 16 19 271 220 "
                   "15586 12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 "
                   "117413 865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 "
                   "17773 256 4574 842 256")
            << QStringLiteral(
                   "30707 101495 129 123 220 16 20 21 38214 364 76 2846 9258 384 5431 4265 "
                   "2846 8207 3132 16 20 20 220 54939 127104 158 30489 16100");
        QTest::newRow("llama-bpe") << QStringLiteral("llama-bpe")
            << QStringLiteral(
                   "9906 4435 596 38757 1623 13575 220 4513 1774 220 18 13 975 271 220 15586 "
                   "12340 29386 66806 30 105180 102158 104008 32179 220 109610 110546 117413 "
                   "865 30556")
            << QStringLiteral(
                   "94421 4301 11116 65381 27887 72907 11399 2448 220 131 227 2234 4355 1541 "
                   "17773 256 4574 842 256")
            << QStringLiteral(
                   "30707 30707 61196 129 123 220 10132 38214 364 76 2846 9258 384 5431 4265 "
                   "2846 8207 3132 9992 220 54939 127104 158 30489 27 77");
    }

    void otherPreTokenizers() {
        QFETCH(QString, pre);
        QFETCH(QString, first);
        QFETCH(QString, second);
        QFETCH(QString, third);
        const QString base = vocabPath("llama-bpe");
        HEARTH_REQUIRE_TEST_FILE(base);
        auto file = gguf::File::open(testDataPath(base));
        QVERIFY(file.isOk());
        gguf::Writer w(file->version());
        for (const gguf::KeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
        w.set("tokenizer.ggml.pre", gguf::Value::string(pre.toStdString()));
        auto t = loadTokenizer(w);
        QVERIFY(t.isOk());
        QVERIFY(t->warnings().empty());
        const std::string kFirst =
            "Hello World's HELLO'S 12345 3.14\n\n  foo!!! \xC2\xBFQu\xC3\xA9? "
            "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 "
            "\xD9\xA1\xD9\xA2\xD9\xA3 x\xC2\xB2"; // ... ¿Qué? 日本語 한국어 ١٢٣ x²
        const std::string kSecond =
            "camelCaseWord \xC3\x80\xC3\x89\xC3\x8E\xC3\xB5\xC3\xBC \xC7\x85ungla don'T  \t\r\n "
            "end  "; // camelCaseWord ÀÉÎõü ǅungla don'T ...
        QCOMPARE(QString::fromStdString(idsString(encode(*t, kFirst))), first);
        QCOMPARE(QString::fromStdString(idsString(encode(*t, kSecond))), second);
        // Combining marks, digits, contractions, brackets: what tells the families apart.
        const std::string kThird =
            "\xE0\xA5\x8D\xE0\xA5\x8D\xE0\xA4\xA8\xC5\xBF 156\xD0\x93 'm'msa e_i'd'mdt []155 "
            "\xCC\x81\xCC\x88\xE2\x83\x9D<n"; // ््नſ 156Г ... ́̈⃝<n
        QCOMPARE(QString::fromStdString(idsString(encode(*t, kThird))), third);
    }

    // Decoded text as the reference's llama_detokenize gives it.
    void decodeMatchesReference() {
        {
            LOAD_OR_SKIP(t, vocabPath("llama-spm"));
            QCOMPARE(*t->decode(Ids{1, 15043, 3186}), std::string(" Hello world"));
            QCOMPARE(*t->decode(Ids{15043, 3186}), std::string("Hello world"));
            QCOMPARE(*t->decode(Ids{29871, 15043}), std::string(" Hello"));
            DecodeOptions render;
            render.renderSpecial = true;
            QCOMPARE(*t->decode(Ids{1, 15043, 3186}, render), std::string("<s> Hello world"));
        }
        {
            LOAD_OR_SKIP(t, vocabPath("llama-bpe"));
            // clean_up_tokenization_spaces applies to llama-bpe...
            const Ids ids{9906, 1174, 1917, 364, 82, 364, 865, 1541, 364, 83, 949};
            QCOMPARE(*t->decode(ids), std::string("Hello, world's'x don 't?"));
            QCOMPARE(*t->decode(ids, rawDecode()), std::string("Hello , world 's ' x don 't ?"));
            DecodeOptions render;
            render.renderSpecial = true;
            QCOMPARE(*t->decode(Ids{128000, 9906, 128009}), std::string("Hello"));
            QCOMPARE(*t->decode(Ids{128000, 9906, 128009}, render),
                     std::string("<|begin_of_text|>Hello<|eot_id|>"));
        }
        {
            LOAD_OR_SKIP(t, vocabPath("qwen2"));
            // ... but not to qwen2.
            const Ids ids{9707, 1154, 1879, 364, 82, 364, 856, 1513, 364, 83, 937};
            QCOMPARE(*t->decode(ids), std::string("Hello , world 's ' x don 't ?"));
        }
    }

    void streamingSplitCharacters() {
        LOAD_OR_SKIP(t, vocabPath("llama-spm"));
        // Emoji and rare CJK fall back to byte tokens; the stream holds partial characters.
        const std::string text = "Hi \xF0\x9F\xA6\x99 and \xF0\xA0\x80\x80 \xE4\xB8\xAD!";
        const Ids ids = encode(*t, text, true);
        StreamDecoder stream(*t);
        std::string out;
        bool heldBack = false;
        for (int32_t id : ids) {
            auto part = stream.push(id);
            QVERIFY(part.isOk());
            QVERIFY(tokenizer::isValidUtf8(*part));
            heldBack = heldBack || stream.pendingBytes() > 0;
            out += *part;
        }
        out += stream.finish();
        QVERIFY(heldBack);
        QCOMPARE(out, *t->decode(ids, rawDecode()));
        QCOMPARE(out, " " + text);
    }
};

QTEST_GUILESS_MAIN(TestTokenizerVocab)
#include "test_tokenizer_vocab.moc"
