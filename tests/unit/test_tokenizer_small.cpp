// Tests of encoding and decoding on small hand-made vocabularies: BPE merge order, SPM score
// order and byte fallback, WordPiece matching and normalizing, special-token matching,
// BOS/EOS/SEP, decode rules and the streaming decoder.
#include "test_tokenizer_support.h"
#include "tokenizer/unicode.h"
#include "tokenizer/wpm.h"

#include <QElapsedTimer>
#include <QtTest>

#include <random>
#include <thread>

using namespace hearth;
using namespace hearth::test;
using hearth::tokenizer::DecodeOptions;
using hearth::tokenizer::StreamDecoder;
using hearth::tokenizer::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

Ids encode(const Tokenizer& t, std::string_view text, bool addSpecial = false,
           bool parseSpecial = false) {
    auto ids = t.encode(text, addSpecial, parseSpecial);
    return ids ? *ids : Ids{-999};
}

std::string decode(const Tokenizer& t, const Ids& ids, DecodeOptions options = {}) {
    auto text = t.decode(ids, options);
    return text ? *text : std::string("<error: ") + text.status().toString() + ">";
}

Tokenizer mustLoad(const VocabSpec& spec) {
    auto t = loadTokenizer(spec);
    if (!t) qFatal("loading the test vocabulary failed: %s", t.status().toString().c_str());
    return *t;
}

std::string streamAll(const Tokenizer& t, const Ids& ids, DecodeOptions options = {}) {
    StreamDecoder stream(t, options);
    std::string out;
    for (int32_t id : ids) {
        auto part = stream.push(id);
        if (!part) return "<error>";
        if (!tokenizer::isValidUtf8(*part)) return "<invalid utf-8 chunk>";
        out += *part;
    }
    return out + stream.finish();
}

} // namespace

class TestTokenizerSmall : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void bpeMergesLowestRankFirst() {
        VocabSpec spec = byteLevelVocab();
        const int32_t ab = spec.add("ab");
        const int32_t bc = spec.add("bc");
        const int32_t abc = spec.add("abc");
        // "b c" outranks "a b": abc -> a + bc, and (a, bc) has no merge.
        spec.merges = std::vector<std::string>{"b c", "a b", "ab c"};
        QCOMPARE(encode(mustLoad(spec), "abc"), (Ids{'a', bc}));
        // "a b" first: ab + c, then "ab c".
        spec.merges = std::vector<std::string>{"a b", "b c", "ab c"};
        QCOMPARE(encode(mustLoad(spec), "abc"), (Ids{abc}));
        QCOMPARE(encode(mustLoad(spec), "abab"), (Ids{ab, ab}));
    }

    // tokenizer.ggml.model = "gemma4": BPE over raw UTF-8 with spaces as U+2581, byte tokens
    // <0xXX> for characters the vocabulary lacks, newline runs kept whole, BOS always added.
    void gemma4SentencePieceShapedBpe() {
        VocabSpec spec = spmVocab(); // <unk> <s> </s> <0x00>..<0xFF>
        spec.model = "gemma4";
        spec.pre = std::string("llama-bpe"); // ignored: the model name fixes the pre-tokenizer
        const std::string sp = spmSpace();
        const int32_t a = spec.add("a");
        const int32_t b = spec.add("b");
        const int32_t space = spec.add(sp);
        const int32_t spaceA = spec.add(sp + "a");
        const int32_t ab = spec.add("ab");
        const int32_t nl = spec.add("\n");
        const int32_t nl3 = spec.add("\n\n\n");
        const int32_t e = spec.add("\xC3\xA9"); // é
        // "\n \n" merges first, so "\n\n\n" would end as "\n\n" + "\n" without the
        // newline-run rule; the run is a token, so it is emitted whole.
        const int32_t nl2 = spec.add("\n\n");
        spec.merges = std::vector<std::string>{"\n \n", sp + " a", "a b", "\n\n \n"};
        spec.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(false));
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
        };
        const Tokenizer t = mustLoad(spec);
        QCOMPARE(t.modelType(), tokenizer::ModelType::Bpe);
        QCOMPARE(t.preTokenizerName(), std::string("gemma4"));
        QVERIFY(t.addBos());
        QCOMPARE(t.warnings().size(), size_t(1)); // the add_bos_token override
        QCOMPARE(encode(t, "ab a"), (Ids{ab, spaceA}));
        QCOMPARE(encode(t, " b"), (Ids{space, b}));
        QCOMPARE(encode(t, "a\n\n\nb"), (Ids{a, nl3, b}));
        QCOMPARE(encode(t, "\n\n\n\n"), (Ids{nl2, nl2}));
        QCOMPARE(encode(t, "\n"), (Ids{nl}));
        // é is a token; 日 is not and falls back to its three byte tokens.
        QCOMPARE(encode(t, "\xC3\xA9\xE6\x97\xA5"),
                 (Ids{e, spmByteToken(0xE6), spmByteToken(0x97), spmByteToken(0xA5)}));
        QCOMPARE(encode(t, "a", true), (Ids{1, a}));
        // Decoding turns U+2581 back into spaces and byte tokens into bytes.
        QCOMPARE(decode(t, Ids{ab, spaceA, space, spmByteToken(0xE6), spmByteToken(0x97),
                               spmByteToken(0xA5)}),
                 std::string("ab a \xE6\x97\xA5"));
    }

    void bpeTiesGoLeftmost() {
        VocabSpec spec = byteLevelVocab();
        const int32_t aa = spec.add("aa");
        spec.merges = std::vector<std::string>{"a a"};
        const Tokenizer t = mustLoad(spec);
        QCOMPARE(encode(t, "aaa"), (Ids{aa, 'a'}));
        QCOMPARE(encode(t, "aaaa"), (Ids{aa, aa}));
    }

    void bpeSpellsSpacesAndBytes() {
        VocabSpec spec = byteLevelVocab();
        const int32_t spaceA = spec.add("\xC4\xA0" "a"); // "Ġa"
        spec.merges = std::vector<std::string>{"\xC4\xA0 a"};
        const Tokenizer t = mustLoad(spec);
        // GPT-2 rules: "x", " a"; the byte stand-in for ' ' is Ġ.
        QCOMPARE(encode(t, "x a"), (Ids{'x', spaceA}));
        // Non-ASCII text becomes its UTF-8 bytes.
        QCOMPARE(encode(t, "\xC3\xA9"), (Ids{0xC3, 0xA9}));
        // Invalid UTF-8 is tokenized as U+FFFD (EF BF BD), never rejected.
        QCOMPARE(encode(t, "\xFF"), (Ids{0xEF, 0xBF, 0xBD}));
        QCOMPARE(decode(t, encode(t, "x a \xC3\xA9")), std::string("x a \xC3\xA9"));
    }

    void bpeIgnoreMergesTakesWholeWords() {
        VocabSpec spec = byteLevelVocab("llama-bpe");
        const int32_t xyz = spec.add("xyz");
        QCOMPARE(encode(mustLoad(spec), "xyz"), (Ids{xyz}));
        spec.pre = "gpt-2"; // no ignore_merges: no merges, so single bytes
        QCOMPARE(encode(mustLoad(spec), "xyz"), (Ids{'x', 'y', 'z'}));
    }

    void bpeAddSpecialFollowsTheVocabulary() {
        VocabSpec spec = byteLevelVocab("llama-bpe"); // llama-bpe adds BOS by default
        const int32_t bos = spec.add("<|bos|>", 3);
        const int32_t eos = spec.add("<|eos|>", 3);
        spec.extra = [&](gguf::Writer& w) {
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(uint32_t(bos)));
            w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(uint32_t(eos)));
        };
        Tokenizer t = mustLoad(spec);
        QVERIFY(t.addBos() && !t.addEos());
        QCOMPARE(encode(t, "a", true), (Ids{bos, 'a'}));
        QCOMPARE(encode(t, "a", false), (Ids{'a'}));
        QCOMPARE(encode(t, "", true), (Ids{bos}));
        spec.extra = [&](gguf::Writer& w) {
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(uint32_t(bos)));
            w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(uint32_t(eos)));
            w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(false));
            w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
            w.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(true));
        };
        t = mustLoad(spec);
        QCOMPARE(encode(t, "a", true), (Ids{'a', eos}));
        QVERIFY(t.isEog(eos));
    }

    void specialTokensLongestFirst() {
        VocabSpec spec = byteLevelVocab();
        const int32_t ab = spec.add("ab", 4);   // user-defined: matched even without parsing
        const int32_t bcd = spec.add("bcd", 4); // longer: claims text first
        const int32_t ctl = spec.add("<c>", 3); // control: only with parseSpecial
        const Tokenizer t = mustLoad(spec);
        QCOMPARE(encode(t, "abcd"), (Ids{'a', bcd}));
        QCOMPARE(encode(t, "ab ab"), (Ids{ab, ' ', ab}));
        QCOMPARE(encode(t, "x<c>y"), (Ids{'x', '<', 'c', '>', 'y'}));
        QCOMPARE(encode(t, "x<c>y", false, true), (Ids{'x', ctl, 'y'}));
        QCOMPARE(encode(t, "<c><c>", false, true), (Ids{ctl, ctl}));
        // Pieces: control text only when asked for.
        QCOMPARE(t.tokenPiece(ctl, false), std::string());
        QCOMPARE(t.tokenPiece(ctl, true), std::string("<c>"));
        QCOMPARE(t.tokenPiece(ab, false), std::string("ab"));
        QCOMPARE(decode(t, Ids{'x', ctl, 'y'}), std::string("xy"));
        DecodeOptions render;
        render.renderSpecial = true;
        QCOMPARE(decode(t, Ids{'x', ctl, 'y'}, render), std::string("x<c>y"));
    }

    void spmMergesHighestScoreFirst() {
        VocabSpec spec = spmVocab();
        const std::string sp = spmSpace();
        const int32_t spaceA = spec.add(sp + "a", 1, -0.5f);
        const int32_t ab = spec.add("ab", 1, -1.0f);
        const int32_t space = spec.add(sp, 1, -2.0f);
        QCOMPARE(encode(mustLoad(spec), "ab"), (Ids{spaceA, spmByteToken('b')}));
        spec.scores[size_t(spaceA)] = -1.0f;
        spec.scores[size_t(ab)] = -0.5f;
        QCOMPARE(encode(mustLoad(spec), "ab"), (Ids{space, ab}));
        // Equal scores: the leftmost pair wins.
        spec.scores[size_t(spaceA)] = -1.0f;
        spec.scores[size_t(ab)] = -1.0f;
        QCOMPARE(encode(mustLoad(spec), "ab"), (Ids{spaceA, spmByteToken('b')}));
    }

    void spmByteFallbackAndUnknown() {
        VocabSpec spec = spmVocab();
        const int32_t spaceA = spec.add(spmSpace() + "a", 1, -1.0f);
        Tokenizer t = mustLoad(spec);
        // é is not in the vocabulary: its two bytes.
        QCOMPARE(encode(t, "a\xC3\xA9"), (Ids{spaceA, spmByteToken(0xC3), spmByteToken(0xA9)}));
        QCOMPARE(encode(t, "a", true), (Ids{1, spaceA}));
        QCOMPARE(encode(t, "", true), (Ids{1}));
        QCOMPARE(encode(t, ""), Ids{});
        // Without byte tokens the unknown token stands in, once per byte.
        VocabSpec noBytes = spmVocab(false);
        const int32_t a = noBytes.add(spmSpace() + "a", 1, -1.0f);
        t = mustLoad(noBytes);
        QCOMPARE(encode(t, "a\xC3\xA9"), (Ids{a, 0, 0}));
    }

    void spmSpacePrefixAfterSpecialTokens() {
        VocabSpec spec = spmVocab();
        const std::string sp = spmSpace();
        const int32_t spaceA = spec.add(sp + "a", 1, -1.0f);
        const Tokenizer t = mustLoad(spec);
        QVERIFY(t.addSpacePrefix());
        // The prefix goes on text at the start and after each special token.
        QCOMPARE(encode(t, "a</s>a", false, true), (Ids{spaceA, 2, spaceA}));
        QCOMPARE(encode(t, "<s>a", true, true), (Ids{1, 1, spaceA}));
        // add_space_prefix = false.
        VocabSpec noPrefix = spec;
        noPrefix.extra = [](gguf::Writer& w) {
            w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(false));
        };
        const Tokenizer t2 = mustLoad(noPrefix);
        QCOMPARE(encode(t2, "a"), (Ids{spmByteToken('a')}));
        QCOMPARE(encode(t2, " a"), (Ids{spaceA}));
    }

    void spmDecodeLeadingSpaceRules() {
        VocabSpec spec = spmVocab();
        const std::string sp = spmSpace();
        const int32_t hello = spec.add(sp + "Hello", 1, -1.0f);
        const int32_t world = spec.add(sp + "world", 1, -1.0f);
        const Tokenizer t = mustLoad(spec);
        QCOMPARE(decode(t, Ids{hello, world}), std::string("Hello world"));
        // llama.cpp keeps the space after a leading BOS, removed or not.
        QCOMPARE(decode(t, Ids{1, hello, world}), std::string(" Hello world"));
        DecodeOptions remove;
        remove.removeSpecial = true;
        QCOMPARE(decode(t, Ids{1, hello, world}, remove), std::string(" Hello world"));
        DecodeOptions afterBos;
        afterBos.stripSpaceAfterBos = true;
        QCOMPARE(decode(t, Ids{1, hello, world}, afterBos), std::string("Hello world"));
        afterBos.removeSpecial = true;
        QCOMPARE(decode(t, Ids{1, hello, world, 2}, afterBos), std::string("Hello world"));
        DecodeOptions render;
        render.renderSpecial = true;
        QCOMPARE(decode(t, Ids{1, hello, 2}, render), std::string("<s> Hello</s>"));
        // A continuation keeps its first space, also in the streaming decoder.
        DecodeOptions continuation;
        continuation.stripLeadingSpace = false;
        continuation.stripSpaceAfterBos = true;
        QCOMPARE(decode(t, Ids{hello, world}, continuation), std::string(" Hello world"));
        QCOMPARE(streamAll(t, Ids{hello, world}, continuation), std::string(" Hello world"));
        QCOMPARE(streamAll(t, Ids{hello, world}), std::string("Hello world"));
        // Byte tokens decode to their bytes.
        QCOMPARE(decode(t, Ids{spmByteToken(0xC3), spmByteToken(0xA9)}), std::string("\xC3\xA9"));
        // Out-of-range ids are an error, not a crash.
        QVERIFY(!t.decode(Ids{hello, 100000}).isOk());
        QVERIFY(!t.decode(Ids{-1}).isOk());
        QCOMPARE(t.tokenPiece(-5), std::string());
    }

    void bpeCleanSpaces() {
        VocabSpec spec = byteLevelVocab("gpt-2"); // clean_up_tokenization_spaces: on
        const Tokenizer t = mustLoad(spec);
        const auto ids = [](std::string_view s) {
            Ids out;
            for (char c : s) out.push_back(static_cast<uint8_t>(c));
            return out;
        };
        QCOMPARE(decode(t, ids("Hi , there . Ok ? Yes !")), std::string("Hi, there. Ok? Yes!"));
        QCOMPARE(decode(t, ids("it 's I 'm we 're you 've")), std::string("it's I'm we're you've"));
        QCOMPARE(decode(t, ids("don 't I 'd we 'll")), std::string("don 't I 'd we 'll"));
        QCOMPARE(decode(t, ids("a ' b")), std::string("a'b"));
        DecodeOptions raw;
        raw.cleanSpaces = false;
        QCOMPARE(decode(t, ids("Hi , it 's"), raw), std::string("Hi , it 's"));
        // qwen2 does not clean.
        const Tokenizer q = mustLoad(byteLevelVocab("qwen2"));
        QCOMPARE(decode(q, ids("Hi , it 's")), std::string("Hi , it 's"));
    }

    // WordPiece takes the longest token at each point, left to right (not the fewest tokens),
    // starting each word with "▁"; a word it cannot finish is one [UNK].
    void wordPieceGreedyLongestMatch() {
        VocabSpec spec = wpmVocab();
        const std::string w = spmSpace();
        const int32_t un = spec.add(w + "un");
        const int32_t unbe = spec.add(w + "unbe");
        const int32_t liev = spec.add("liev");
        const int32_t able = spec.add("able");
        spec.add("lie");
        spec.add("vable");
        const int32_t a = spec.add(w + "a");
        const int32_t b = spec.add("b");
        const int32_t dot = spec.add(w + ".");
        const int32_t mark = spec.add(w);
        const int32_t x = spec.add("x");
        const Tokenizer t = mustLoad(spec);
        QCOMPARE(encode(t, "unbelievable"), (Ids{unbe, liev, able}));
        QCOMPARE(encode(t, "un"), (Ids{un}));
        QCOMPARE(encode(t, "unbelievab"), Ids{1}); // no token "ab" or "a" after "liev"
        QCOMPARE(encode(t, "unbelievablex"), (Ids{unbe, liev, able, x}));
        QCOMPARE(encode(t, "unbelievabley a"), (Ids{1, a})); // "y" is no token: the word is [UNK]
        QCOMPARE(encode(t, "ab.a"), (Ids{a, b, dot, a}));    // "." is a word of its own
        QCOMPARE(encode(t, "x"), (Ids{mark, x}));            // "▁" alone, then "x"
        QCOMPARE(encode(t, "xa"), Ids{1}); // ... but nothing spells the "a" after it
        QCOMPARE(encode(t, "", true), (Ids{2, 3}));
        QCOMPARE(encode(t, "un [SEP] a", true, true), (Ids{2, un, 3, a, 3}));
        QCOMPARE(encode(t, "un [SEP] a", true, false), (Ids{2, un, 1, 1, 1, a, 3}));
        // Decoding: the word mark is a space, continuation pieces join the word.
        QCOMPARE(decode(t, Ids{unbe, liev, able, a, b, dot}), std::string(" unbelievable ab."));
        DecodeOptions raw;
        raw.cleanSpaces = false;
        QCOMPARE(decode(t, Ids{unbe, liev, able, a, b, dot}, raw),
                 std::string(" unbelievable ab ."));
        DecodeOptions render;
        render.renderSpecial = true;
        render.removeSpecial = true; // strips [CLS] (BOS); [SEP] is not EOS and stays
        QCOMPARE(decode(t, Ids{2, un, 1, 3}, render), std::string(" un[UNK][SEP]"));
        QCOMPARE(decode(t, Ids{2, un, 1, 3}), std::string(" un"));
        QCOMPARE(streamAll(t, Ids{unbe, liev, able, a}), std::string(" unbelievable a"));
    }

    // The BERT normalizer and word splitter, with each normalizer setting.
    void wordPieceWords() {
        using tokenizer::detail::WpmNormalizer;
        const auto words = [](std::string_view text, WpmNormalizer n = {}) {
            std::vector<std::string> out;
            tokenizer::detail::splitWpmWords(text, n, out);
            std::string joined;
            for (const std::string& w : out) joined += (joined.empty() ? "" : "|") + w;
            return joined;
        };
        const std::string resume = "R\xC3\x89sum\xC3\xA9";      // RÉsumé
        const std::string resumeNfd = "RE\xCC\x81sume\xCC\x81"; // the same, decomposed
        QCOMPARE(words(resume), std::string("resume"));
        QCOMPARE(words(resumeNfd), std::string("resume"));
        QCOMPARE(words(resume, {false, false}), resume);
        QCOMPARE(words(resume, {true, false}), std::string("r\xC3\xA9sum\xC3\xA9"));
        QCOMPARE(words(resumeNfd, {true, false}), std::string("re\xCC\x81sume\xCC\x81"));
        QCOMPARE(words(resume, {false, true}), std::string("REsume"));
        // Whitespace splits; punctuation, ASCII symbols and CJK ideographs are words alone;
        // other symbols, kana and digits are not.
        QCOMPARE(words("  a\tb\n\xE3\x80\x80"
                       "c  "),
                 std::string("a|b|c"));
        QCOMPARE(words("it's a+b=c, (x)"), std::string("it|'|s|a|+|b|=|c|,|(|x|)"));
        QCOMPARE(words("a\xC2\xA9"
                       "b \xE2\x82\xAC"
                       "5"),
                 std::string("a\xC2\xA9"
                             "b|\xE2\x82\xAC"
                             "5"));
        QCOMPARE(words("ab\xE4\xB8\xAD\xE6\x96\x87"
                       "cd\xE3\x81\x82\xE3\x81\x84"),
                 std::string("ab|\xE4\xB8\xAD|\xE6\x96\x87|cd\xE3\x81\x82\xE3\x81\x84"));
        // Control and format characters, NUL and invalid UTF-8 vanish without splitting.
        QCOMPARE(words(std::string("a\x01"
                                   "b\0c\x7f"
                                   "d\xE2\x80\x8B"
                                   "e\xFF"
                                   "f\xE2\x82"
                                   "g",
                                   16)),
                 std::string("abcdefg"));
        // One codepoint in, at most one out: a Hangul syllable keeps its first jamo, "ß" stays,
        // "İ" becomes "i", the "ﬁ" ligature has no canonical decomposition.
        QCOMPARE(words("\xED\x95\x9C \xC3\x9F \xC4\xB0 \xEF\xAC\x81"),
                 std::string("\xE1\x84\x92|\xC3\x9F|i|\xEF\xAC\x81"));
        QCOMPARE(words(""), std::string());
        QCOMPARE(tokenizer::detail::simpleLowercase('A'), uint32_t('a'));
        QCOMPARE(tokenizer::detail::simpleLowercase(0x100), uint32_t(0x101));
        QCOMPARE(tokenizer::detail::simpleLowercase(0x101), uint32_t(0x101));
        QCOMPARE(tokenizer::detail::simpleLowercase(0x10FFFF), uint32_t(0x10FFFF));
        QCOMPARE(tokenizer::detail::firstOfNfd(0xC5), uint32_t('A'));
        QCOMPARE(tokenizer::detail::firstOfNfd(0xD7A3), uint32_t(0x1112));
        QCOMPARE(tokenizer::detail::firstOfNfd(0x10FFFF), uint32_t(0x10FFFF));
    }

    // The GGUF normalizer keys reach the tokenizer; strip_accents follows lowercase unless set.
    void wordPieceNormalizerKeys() {
        VocabSpec spec = wpmVocab();
        const std::string w = spmSpace();
        const int32_t lower = spec.add(w + "resume");
        const int32_t accented = spec.add(w + "r\xC3\xA9sum\xC3\xA9");
        const int32_t cased = spec.add(w + "R\xC3\x89sum\xC3\xA9");
        const int32_t capital = spec.add(w + "REsume");
        const auto ids = spec.extra;
        const auto load = [&](std::optional<bool> lowercase, std::optional<bool> strip) {
            spec.extra = [=](gguf::Writer& wr) {
                ids(wr);
                if (lowercase)
                    wr.set("tokenizer.ggml.normalizer.lowercase", gguf::Value::boolean(*lowercase));
                if (strip)
                    wr.set("tokenizer.ggml.normalizer.strip_accents", gguf::Value::boolean(*strip));
            };
            return mustLoad(spec);
        };
        const std::string text = "R\xC3\x89sum\xC3\xA9";
        QCOMPARE(encode(load(std::nullopt, std::nullopt), text), Ids{lower});
        QCOMPARE(encode(load(false, std::nullopt), text), Ids{cased});
        QCOMPARE(encode(load(true, false), text), Ids{accented});
        QCOMPARE(encode(load(false, true), text), Ids{capital});
    }

    // A word has no length limit (as in llama.cpp): a long one is cut in linear time, and a
    // long one that cannot be cut is one [UNK].
    void wordPieceLongWords() {
        VocabSpec spec = wpmVocab();
        const int32_t start = spec.add(spmSpace() + "ab");
        const int32_t ab = spec.add("ab");
        const Tokenizer t = mustLoad(spec);
        std::string word;
        for (int i = 0; i < 200000; ++i) word += "ab";
        QElapsedTimer timer;
        timer.start();
        const Ids ids = encode(t, word);
        QCOMPARE(ids.size(), size_t(200000));
        QCOMPARE(ids.front(), start);
        QCOMPARE(ids.back(), ab);
        QCOMPARE(encode(t, word + "c"), Ids{1});
        qInfo("two 400 KB words in %lld ms", timer.elapsed());
    }

    void streamDecoderHoldsPartialCharacters() {
        const Tokenizer t = mustLoad(spmVocab());
        StreamDecoder stream(t);
        QCOMPARE(*stream.push(spmByteToken(0xE4)), std::string());
        QCOMPARE(stream.pendingBytes(), size_t(1));
        QCOMPARE(*stream.push(spmByteToken(0xB8)), std::string());
        QCOMPARE(*stream.push(spmByteToken(0xAD)), std::string("\xE4\xB8\xAD")); // 中
        QCOMPARE(stream.pendingBytes(), size_t(0));
        // A byte that can never be valid comes out as U+FFFD at once.
        QCOMPARE(*stream.push(spmByteToken(0xFF)), std::string("\xEF\xBF\xBD"));
        // An unfinished character at the end becomes U+FFFD.
        QCOMPARE(*stream.push(spmByteToken(0xF0)), std::string());
        QCOMPARE(stream.finish(), std::string("\xEF\xBF\xBD"));
        QVERIFY(!stream.push(12345).isOk());
        QCOMPARE(stream.pendingBytes(), size_t(0));
    }

    void streamDecoderMatchesDecode() {
        VocabSpec spec = spmVocab();
        const std::string sp = spmSpace();
        const int32_t hello = spec.add(sp + "Hello", 1, -1.0f);
        const Tokenizer t = mustLoad(spec);
        const Ids ids{1, hello, spmByteToken(0xF0), spmByteToken(0x9F), spmByteToken(0x98),
                      spmByteToken(0x80), hello, 2};
        DecodeOptions raw;
        raw.cleanSpaces = false;
        QCOMPARE(streamAll(t, ids, raw), decode(t, ids, raw));
        DecodeOptions special;
        special.renderSpecial = true;
        special.stripSpaceAfterBos = true;
        special.cleanSpaces = false;
        QCOMPARE(streamAll(t, ids, special), decode(t, ids, special));
        DecodeOptions remove;
        remove.removeSpecial = true;
        remove.stripSpaceAfterBos = true;
        remove.cleanSpaces = false;
        const Ids noEos(ids.begin(), ids.end() - 1);
        QCOMPARE(streamAll(t, noEos, remove), decode(t, noEos, remove));
    }

    void oneTokenizerManyThreads() {
        VocabSpec spec = byteLevelVocab("llama-bpe");
        spec.add("ab");
        spec.add("<|x|>", 3);
        spec.merges = std::vector<std::string>{"a b"};
        const Tokenizer t = mustLoad(spec);
        std::vector<std::string> texts;
        std::vector<Ids> expected;
        std::mt19937 rng(99);
        for (int i = 0; i < 64; ++i) {
            std::string s;
            for (int k = 0; k < 200; ++k) s += "ab <|x|>\xC3\xA9!"[rng() % 12];
            texts.push_back(s);
            expected.push_back(encode(t, s, true, true));
        }
        std::vector<int> mismatches(4, 0);
        std::vector<std::thread> threads;
        for (int w = 0; w < 4; ++w) {
            threads.emplace_back([&, w] {
                const Tokenizer copy = t; // copies share the vocabulary
                for (int round = 0; round < 20; ++round) {
                    for (size_t i = 0; i < texts.size(); ++i) {
                        const Tokenizer& use = (i % 2) ? copy : t;
                        if (encode(use, texts[i], true, true) != expected[i]) ++mismatches[w];
                    }
                }
            });
        }
        for (std::thread& th : threads) th.join();
        QCOMPARE(mismatches, std::vector<int>(4, 0));
    }

    void randomBytesNeverBreakEncoding() {
        VocabSpec bpeSpec = byteLevelVocab("llama-bpe");
        bpeSpec.add("<|x|>", 3);
        VocabSpec spmSpec = spmVocab();
        spmSpec.add(spmSpace() + "a", 1, -1.0f);
        spmSpec.add(spmSpace(), 1, -2.0f);
        VocabSpec wpmSpec = wpmVocab();
        for (int c = 0x20; c < 0x7F; ++c) {
            wpmSpec.add(std::string(1, char(c)));
            wpmSpec.add(spmSpace() + char(c));
        }
        const Tokenizer bpe = mustLoad(bpeSpec);
        const Tokenizer spm = mustLoad(spmSpec);
        const Tokenizer wpm = mustLoad(wpmSpec);
        std::mt19937 rng(1234);
        for (int i = 0; i < 2000; ++i) {
            std::string s(rng() % 40, '\0');
            for (char& c : s) c = static_cast<char>(rng() % 256);
            if (i % 3 == 0) s += "<|x|>";
            for (const Tokenizer* t : {&bpe, &spm, &wpm}) {
                auto ids = t->encode(s, i % 2 == 0, i % 5 == 0);
                QVERIFY(ids.isOk());
                for (int32_t id : *ids) QVERIFY(id >= 0 && id < t->vocabSize());
                QVERIFY(t->decode(*ids).isOk());
                StreamDecoder stream(*t);
                for (int32_t id : *ids) QVERIFY(tokenizer::isValidUtf8(*stream.push(id)));
                QVERIFY(tokenizer::isValidUtf8(stream.finish()));
            }
            // SPM byte fallback round-trips arbitrary bytes. (Not with spaces: a space becomes
            // U+2581, whose bytes a preceding truncated sequence can swallow.)
            if (s.find(' ') == std::string::npos && s.find(spmSpace()) == std::string::npos) {
                DecodeOptions raw;
                raw.cleanSpaces = false;
                QCOMPARE(decode(spm, encode(spm, s), raw), s);
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestTokenizerSmall)
#include "test_tokenizer_small.moc"
