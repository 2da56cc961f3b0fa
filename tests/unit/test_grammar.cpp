// Grammar tests: GBNF parsing and its errors, text matching (literals, classes, repetitions,
// UTF-8 read a byte at a time), and token masks checked exactly against a brute-force oracle
// (every token's bytes matched from scratch) on SentencePiece and byte-level BPE vocabularies.
#include "hearth/gguf.h"
#include "hearth/grammar.h"
#include "sample/grammar_constraint.h"
#include "test_support.h"

#include <QtTest>

#include <random>

using namespace hearth;
using namespace hearth::grammar;
using hearth::test::testDataDir;

namespace {

std::shared_ptr<const Grammar> parsed(const std::string& text) {
    auto g = parseGbnf(text);
    if (!g) qFatal("grammar did not parse: %s", g.status().message().c_str());
    return *g;
}

TextMatch match(const std::string& grammar, const std::string& text) { return matchText(*parsed(grammar), text); }

std::optional<tokenizer::Tokenizer> vocab(const char* name) {
    const QString path = QDir(testDataDir()).filePath(QStringLiteral("models/") + name);
    auto file = gguf::File::open(path.toStdString());
    if (!file) return std::nullopt;
    auto tok = tokenizer::Tokenizer::fromGguf(*file);
    if (!tok) return std::nullopt;
    return std::move(*tok);
}

// The oracle: token t is allowed after `prefix` iff prefix + piece(t) is still a prefix of a
// sentence (stop tokens: iff prefix is a sentence).
std::vector<bool> bruteForceMask(const Grammar& g, const TokenTrie& trie, const std::string& prefix,
                                 const std::vector<int32_t>& stops) {
    std::vector<bool> out(size_t(trie.vocabSize()), false);
    const bool sentence = matchText(g, prefix) == TextMatch::Complete;
    for (int32_t t = 0; t < trie.vocabSize(); ++t) {
        if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
            out[size_t(t)] = sentence;
            continue;
        }
        const std::string_view p = trie.piece(t);
        if (p.empty()) continue;
        out[size_t(t)] = matchText(g, prefix + std::string(p)) != TextMatch::Rejected;
    }
    return out;
}

bool bit(std::span<const uint64_t> mask, int32_t t) {
    return !mask.empty() && (mask[size_t(t) / 64] >> (t % 64)) & 1u;
}

const char* kJsonish =
    "root   ::= object\n"
    "object ::= \"{\" ( pair ( \",\" \" \"? pair )* )? \"}\"\n"
    "pair   ::= string \":\" \" \"? value\n"
    "value  ::= string | number | object | array | \"true\" | \"false\" | \"null\"\n"
    "array  ::= \"[\" ( value ( \",\" \" \"? value )* )? \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1f] | \"\\\\\" [\"\\\\/bfnrt] | \"\\\\u\" [0-9a-fA-F]{4} )* \"\\\"\"\n"
    "number ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]+ )?\n";

} // namespace

class TestGrammar : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void literalsAndAlternatives() {
        const std::string g = "root ::= \"yes\" | \"no\" | \"maybe\" \" \" (\"so\" | \"not\")";
        QCOMPARE(match(g, "yes"), TextMatch::Complete);
        QCOMPARE(match(g, "no"), TextMatch::Complete);
        QCOMPARE(match(g, "ma"), TextMatch::Prefix);
        QCOMPARE(match(g, "maybe so"), TextMatch::Complete);
        QCOMPARE(match(g, "maybe sx"), TextMatch::Rejected);
        QCOMPARE(match(g, "yess"), TextMatch::Rejected);
        QCOMPARE(match(g, ""), TextMatch::Prefix);
    }

    void classesAndRepetition() {
        const std::string g = "root ::= [a-c]+ [0-9]{2,3} [^x]? \"!\"*\n";
        QCOMPARE(match(g, "abc12"), TextMatch::Complete);
        QCOMPARE(match(g, "a123"), TextMatch::Complete);
        QCOMPARE(match(g, "a1234"), TextMatch::Complete);  // [^x] takes the 4
        QCOMPARE(match(g, "a12345"), TextMatch::Rejected);
        QCOMPARE(match(g, "a1"), TextMatch::Prefix);
        QCOMPARE(match(g, "1"), TextMatch::Rejected);
        QCOMPARE(match(g, "b12y!!!"), TextMatch::Complete);
        QCOMPARE(match(g, "b12x"), TextMatch::Rejected);
        const std::string counted = "root ::= \"a\"{3} \"b\"{2,} \"c\"{0,2}";
        QCOMPARE(match(counted, "aabb"), TextMatch::Rejected);
        QCOMPARE(match(counted, "aaab"), TextMatch::Prefix);
        QCOMPARE(match(counted, "aaabbbbbcc"), TextMatch::Complete);
        QCOMPARE(match(counted, "aaabbccc"), TextMatch::Rejected);
    }

    // Multi-byte characters are read a byte at a time; a lead byte survives only when some
    // completion of it is in the class.
    void utf8ByteByByte() {
        const std::string g = "root ::= [α-ω]+ \"€\" .";
        QCOMPARE(match(g, "αβγ€x"), TextMatch::Complete);
        QCOMPARE(match(g, "αβγ€😀"), TextMatch::Complete);
        QCOMPARE(match(g, "\xce"), TextMatch::Prefix);       // first byte of α..ο
        QCOMPARE(match(g, "\xd0"), TextMatch::Rejected);     // Cyrillic lead byte: no Greek completion
        QCOMPARE(match(g, "Ω"), TextMatch::Rejected);         // U+03A9 is outside α-ω
        QCOMPARE(match(g, "α\xe2\x82"), TextMatch::Prefix);  // two of €'s three bytes
        QCOMPARE(match(g, "α€\xed\xa0\x80"), TextMatch::Rejected); // a surrogate is no character
        QCOMPARE(match(g, "α€\xc0\x80"), TextMatch::Rejected);     // overlong
        const std::string neg = "root ::= [^a-z]*";
        QCOMPARE(match(neg, "ÄÖ123"), TextMatch::Complete);
        QCOMPARE(match(neg, "Äb"), TextMatch::Rejected);
    }

    void escapesCommentsAndLayout() {
        const std::string g = "# a comment\nroot ::= \"\\x41\\u00e9\\n\" # trailing\n   tail\ntail ::=\n  \"\\\"\" |\n  \"\\\\\"\n";
        QCOMPARE(match(g, "Aé\n\""), TextMatch::Complete);
        QCOMPARE(match(g, "Aé\n\\"), TextMatch::Complete);
        QCOMPARE(match(g, "Aé\n"), TextMatch::Prefix);
    }

    // A repetition of something that may be empty loops back without consuming a character,
    // but in tail position: the same parses come round again and the matcher stops there.
    void nullableRepetitionsTerminate() {
        const std::string g = "root ::= ( \"a\"* )* \"b\" ( x | \"c\"? )+\nx ::= \"d\"*";
        QCOMPARE(match(g, "b"), TextMatch::Complete);
        QCOMPARE(match(g, "aaab"), TextMatch::Complete);
        QCOMPARE(match(g, "abcdddc"), TextMatch::Complete);
        QCOMPARE(match(g, "ac"), TextMatch::Rejected);
        // Growing left recursion is still refused.
        QVERIFY(!parseGbnf("root ::= a \"x\"\na ::= \"y\"? root \"z\" | \"w\"").isOk());
    }

    void recursionNests() {
        const std::string g = "root ::= \"(\" root \")\" | \"x\"";
        QCOMPARE(match(g, "((x))"), TextMatch::Complete);
        QCOMPARE(match(g, "((x)"), TextMatch::Prefix);
        QCOMPARE(match(g, "((x)))"), TextMatch::Rejected);
        std::string deep(2000, '(');
        deep += "x" + std::string(2000, ')');
        QCOMPARE(match(g, deep), TextMatch::Complete);
    }

    void parseErrorsNameTheProblem() {
        struct Case {
            const char* text;
            const char* expect;
        };
        const Case cases[] = {
            {"", "no 'root' rule"},
            {"rot ::= \"a\"", "no 'root' rule"},
            {"root ::= item", "rule 'item' is used but not defined"},
            {"root ::= root \"a\" | \"b\"", "left-recursive"},
            {"root ::= a \"x\"\na ::= \"b\"? root", "left-recursive"},
            {"root ::= \"abc", "unterminated string"},
            {"root ::= [a-", "unterminated character class"},
            {"root ::= [z-a]", "runs backwards"},
            {"root ::= \"\\q\"", "unknown escape"},
            {"root ::= \"\\x4\"", "hex digits"},
            {"root ::= (\"a\"", "missing ')'"},
            {"root ::= \"a\"{3,1}", "n < m"},
            {"root ::= \"a\"{99999}", "repetition count above"},
            {"root ::= \"a\" ) \"b\"", "unmatched ')'"},
            {"root ::= \"a\"\nroot ::= \"b\"", "defined twice"},
            {"root ::= @", "unexpected '@'"},
            {"root ::= \"a\"{", "needs a count"},
            {"just words", "expected a rule"},
        };
        for (const Case& c : cases) {
            auto g = parseGbnf(c.text);
            QVERIFY2(!g.isOk(), c.text);
            QVERIFY2(g.status().message().find(c.expect) != std::string::npos,
                     (std::string(c.text) + " -> " + g.status().message()).c_str());
        }
        auto lined = parseGbnf("root ::= a\n\na ::= \"x\" b\n");
        QVERIFY(!lined.isOk());
        QVERIFY2(lined.status().message().find("line 3") != std::string::npos, lined.status().message().c_str());
    }

    // Expansion limits hold for hostile repetition counts, and a grammar at the limit still works.
    void limitsBoundExpansion() {
        GrammarLimits small;
        small.maxElements = 500;
        auto g = parseGbnf("root ::= ( \"ab\" [0-9] ){900}", small);
        QVERIFY(!g.isOk());
        QVERIFY(g.status().message().find("more than 500 symbols") != std::string::npos);
        auto nested = parseGbnf("root ::= ((\"a\"{0,10}){0,10})");
        QVERIFY(nested.isOk());
        QCOMPARE(matchText(**nested, std::string(100, 'a')), TextMatch::Complete);
        QCOMPARE(matchText(**nested, std::string(101, 'a')), TextMatch::Rejected);
        // Hugely ambiguous: 400 helper rules (not 100^4 copies), and once the parses alive at
        // one point exceed the matcher's bound the text is refused instead of the memory growing.
        auto ambiguous = parseGbnf("root ::= ((((\"a\"{0,100}){0,100}){0,100}){0,100})");
        QVERIFY(ambiguous.isOk());
        QElapsedTimer timer;
        timer.start();
        const TextMatch m = matchText(**ambiguous, std::string(5000, 'a'));
        qInfo("4-level ambiguous repetition over 5000 bytes: %s in %lld ms",
              m == TextMatch::Rejected ? "refused" : "matched", qint64(timer.elapsed()));
        auto big = parseGbnf("root ::= [a-z]{0,10000}");
        QVERIFY(big.isOk());
        QCOMPARE(matchText(**big, std::string(10000, 'q')), TextMatch::Complete);
        QCOMPARE(matchText(**big, std::string(10001, 'q')), TextMatch::Rejected);
        GrammarLimits tiny;
        tiny.maxTextBytes = 10;
        QVERIFY(!parseGbnf("root ::= \"0123456789\"", tiny).isOk());
    }

    void masksEqualBruteForceOnSpmAndBpe_data() {
        QTest::addColumn<QString>("vocabFile");
        QTest::newRow("spm llama") << "ggml-vocab-llama-spm.gguf";
        QTest::newRow("bpe llama3") << "ggml-vocab-llama-bpe.gguf";
        QTest::newRow("bpe qwen2") << "ggml-vocab-qwen2.gguf";
    }
    void masksEqualBruteForceOnSpmAndBpe() {
        QFETCH(QString, vocabFile);
        auto tok = vocab(vocabFile.toUtf8().constData());
        if (!tok) QSKIP("vocabulary file not found under HEARTH_TEST_DATA/models");
        auto trie = TokenTrie::build(*tok);
        auto g = parsed(kJsonish);
        const std::vector<int32_t> stops = tok->eogTokens();
        const std::vector<std::string> prefixes = {
            "", "{", "{\"na", "{\"name\": \"Zo\\u00", "{\"a\":[1, 2.5, {\"b\":tr", "{\"é😀\":",
            "{\"k\":\"v\"}", "{\"k\":-0", "{\"s\":\"\xc3"};
        std::vector<int32_t> byteToken(256, -1);
        for (int32_t t = 0; t < trie->vocabSize(); ++t)
            if (trie->piece(t).size() == 1 && byteToken[static_cast<uint8_t>(trie->piece(t)[0])] < 0)
                byteToken[static_cast<uint8_t>(trie->piece(t)[0])] = t;
        for (const std::string& prefix : prefixes) {
            // Reach the prefix through the constraint itself, one single-byte token per byte (SPM's
            // byte-fallback tokens, BPE's byte characters).
            GrammarConstraint c(g, trie, stops);
            for (char ch : prefix) {
                const int32_t id = byteToken[static_cast<uint8_t>(ch)];
                QVERIFY(id >= 0);
                QVERIFY2(c.accept(id).isOk(), prefix.c_str());
            }
            const std::span<const uint64_t> mask = c.allowed();
            const std::vector<bool> want = bruteForceMask(*g, *trie, prefix, stops);
            int allowed = 0;
            for (int32_t t = 0; t < trie->vocabSize(); ++t) {
                if (bit(mask, t) != want[size_t(t)])
                    QFAIL(qPrintable(QStringLiteral("prefix '%1' token %2 '%3': mask %4, oracle %5")
                                         .arg(QString::fromStdString(prefix)).arg(t)
                                         .arg(QString::fromStdString(std::string(trie->piece(t))))
                                         .arg(bit(mask, t)).arg(want[size_t(t)])));
                allowed += want[size_t(t)];
            }
            QVERIFY2(allowed > 0, prefix.c_str());
            QCOMPARE(c.accepting(), matchText(*g, prefix) == TextMatch::Complete);
        }
    }

    // Random walks over allowed tokens always end in sentences, and a token outside the mask
    // is refused.
    void randomWalksStayInTheGrammar() {
        auto tok = vocab("ggml-vocab-qwen2.gguf");
        if (!tok) QSKIP("ggml-vocab-qwen2.gguf not found under HEARTH_TEST_DATA/models");
        auto trie = TokenTrie::build(*tok);
        auto g = parsed(kJsonish);
        const std::vector<int32_t> stops = tok->eogTokens();
        std::mt19937 rng(7);
        int completed = 0;
        for (int walk = 0; walk < 30; ++walk) {
            GrammarConstraint c(g, trie, stops);
            std::string text;
            for (int step = 0; step < 60 && !c.complete(); ++step) {
                const auto mask = c.allowed();
                QVERIFY(!mask.empty());
                std::vector<int32_t> options;
                for (int32_t t = 0; t < trie->vocabSize(); ++t)
                    if (bit(mask, t)) options.push_back(t);
                // Prefer closing brackets late in the walk so some walks finish.
                int32_t pick = options[rng() % options.size()];
                if (step > 30)
                    for (int32_t t : options)
                        if (trie->piece(t) == "}" || trie->piece(t) == "\"" || trie->piece(t) == "]") pick = t;
                if (std::find(stops.begin(), stops.end(), pick) != stops.end()) break;
                QVERIFY(c.accept(pick).isOk());
                text += std::string(trie->piece(pick));
                QVERIFY2(matchText(*g, text) != TextMatch::Rejected, text.c_str());
            }
            if (c.complete()) {
                ++completed;
                QCOMPARE(matchText(*g, text), TextMatch::Complete);
            }
        }
        QVERIFY(completed > 0);
        GrammarConstraint c(g, trie, stops);
        const int32_t letter = tok->findToken("a");
        QVERIFY(letter >= 0);
        QVERIFY(!bit(c.allowed(), letter));
        QVERIFY(!c.accept(letter).isOk());
        QVERIFY(!c.accept(stops.front()).isOk()); // nothing is a sentence yet
    }
};

QTEST_GUILESS_MAIN(TestGrammar)
#include "test_grammar.moc"
