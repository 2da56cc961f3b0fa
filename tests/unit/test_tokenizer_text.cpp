// Tests for the tokenizer's text layer, without any vocabulary: UTF-8 handling, codepoint
// classes, the byte-level alphabet and the pre-tokenizer splits of every family.
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode.h"

#include <QtTest>

#include <set>
#include <string>
#include <vector>

using namespace hearth::tokenizer;

namespace {

using Words = std::vector<std::string>;

Words split(PreTokenizerKind kind, std::string_view text) {
    const std::vector<uint32_t> cps = decodeUtf8(text);
    std::vector<uint8_t> info(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) info[i] = codepointInfo(cps[i]);
    std::vector<CodepointRange> ranges;
    preTokenize(kind, cps, info, ranges);
    Words words;
    uint32_t expectedBegin = 0;
    for (const CodepointRange& r : ranges) {
        if (r.begin != expectedBegin || r.end <= r.begin) return {"<bad ranges>"};
        expectedBegin = r.end;
        std::string w;
        for (uint32_t i = r.begin; i < r.end; ++i) appendUtf8(w, cps[i]);
        words.push_back(w);
    }
    if (expectedBegin != cps.size()) return {"<does not cover the text>"};
    return words;
}

QString show(const Words& words) {
    QStringList parts;
    for (const std::string& w : words) {
        parts << QStringLiteral("[%1]").arg(QString::fromStdString(w));
    }
    return parts.join(QLatin1Char(' '));
}

} // namespace

#define COMPARE_SPLIT(kind, text, ...)                                                             \
    do {                                                                                           \
        const Words got_ = split(kind, text);                                                      \
        const Words want_ = __VA_ARGS__;                                                           \
        if (got_ != want_) qWarning() << "got " << show(got_) << "\nwant" << show(want_);          \
        QVERIFY(got_ == want_);                                                                    \
    } while (0)

class TestTokenizerText : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void utf8DecodeAndEncode() {
        const std::string text = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"; // a é 中 😀
        QCOMPARE(decodeUtf8(text), (std::vector<uint32_t>{'a', 0xE9, 0x4E2D, 0x1F600}));
        std::string back;
        for (uint32_t cp : decodeUtf8(text)) appendUtf8(back, cp);
        QCOMPARE(back, text);
        QVERIFY(isValidUtf8(text));
    }

    void utf8MalformedBecomesReplacement() {
        // Lone continuation byte, truncated 3-byte sequence, invalid lead byte: each bad byte
        // gives U+FFFD and decoding resumes at the next byte.
        QCOMPARE(decodeUtf8("\x80" "a"), (std::vector<uint32_t>{kReplacementChar, 'a'}));
        QCOMPARE(decodeUtf8("\xE4\xB8" "b"),
                 (std::vector<uint32_t>{kReplacementChar, kReplacementChar, 'b'}));
        QCOMPARE(decodeUtf8("\xFF"), (std::vector<uint32_t>{kReplacementChar}));
        QCOMPARE(decodeUtf8("\xF4\x90\x80\x80"), (std::vector<uint32_t>{kReplacementChar}));
        QVERIFY(!isValidUtf8("\xC0\x80"));     // overlong
        QVERIFY(!isValidUtf8("\xED\xA0\x80")); // surrogate
        QVERIFY(!isValidUtf8("\xE4\xB8"));     // truncated
    }

    void utf8IncompleteTailAndSanitizing() {
        QCOMPARE(incompleteUtf8Tail("abc"), size_t(0));
        QCOMPARE(incompleteUtf8Tail("ab\xE4"), size_t(1));
        QCOMPARE(incompleteUtf8Tail("ab\xE4\xB8"), size_t(2));
        QCOMPARE(incompleteUtf8Tail("ab\xF0\x9F\x98"), size_t(3));
        QCOMPARE(incompleteUtf8Tail("ab\xE4\xB8\xAD"), size_t(0)); // complete
        QCOMPARE(incompleteUtf8Tail("ab\x80"), size_t(0));         // never valid: not held
        QCOMPARE(incompleteUtf8Tail("ab\xE0\x80"), size_t(0));     // E0 80 is never valid
        std::string out;
        appendSanitizedUtf8(out, "a\x80" "b\xE4\xB8" "c");
        QCOMPARE(out, std::string("a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c"));
        QVERIFY(isValidUtf8(out));
    }

    void spmLeadByteLengths() {
        QCOMPARE(utf8LengthFromLead('a'), size_t(1));
        QCOMPARE(utf8LengthFromLead(0x80), size_t(1));
        QCOMPARE(utf8LengthFromLead(0xC3), size_t(2));
        QCOMPARE(utf8LengthFromLead(0xE4), size_t(3));
        QCOMPARE(utf8LengthFromLead(0xF0), size_t(4));
        QCOMPARE(utf8LengthFromLead(0xFF), size_t(4));
    }

    void codepointClasses() {
        QCOMPARE(classOf(codepointInfo('a')), CharClass::Letter);
        QCOMPARE(classOf(codepointInfo(0xE9)), CharClass::Letter);   // é
        QCOMPARE(classOf(codepointInfo(0x4E2D)), CharClass::Letter); // 中
        QCOMPARE(classOf(codepointInfo(0x02B0)), CharClass::Letter); // ʰ (Lm)
        QCOMPARE(classOf(codepointInfo('7')), CharClass::Number);
        QCOMPARE(classOf(codepointInfo(0x0663)), CharClass::Number); // ٣
        QCOMPARE(classOf(codepointInfo(0x00B2)), CharClass::Number); // ² (No)
        QCOMPARE(classOf(codepointInfo(0x216B)), CharClass::Number); // Ⅻ (Nl)
        QCOMPARE(classOf(codepointInfo('!')), CharClass::Punctuation);
        QCOMPARE(classOf(codepointInfo(0x3001)), CharClass::Punctuation); // 、
        QCOMPARE(classOf(codepointInfo('$')), CharClass::Symbol);
        QCOMPARE(classOf(codepointInfo('`')), CharClass::Symbol);
        QCOMPARE(classOf(codepointInfo(0x1F600)), CharClass::Symbol); // 😀
        QCOMPARE(classOf(codepointInfo(0x0301)), CharClass::Mark);
        QCOMPARE(classOf(codepointInfo(' ')), CharClass::Separator);
        QCOMPARE(classOf(codepointInfo('\n')), CharClass::Control);
        QCOMPARE(classOf(codepointInfo(0xE000)), CharClass::Control);   // private use
        QCOMPARE(classOf(codepointInfo(0x0378)), CharClass::Undefined); // unassigned
        QCOMPARE(classOf(codepointInfo(0x10FFFF)), CharClass::Undefined);
        QCOMPARE(codepointInfo(0x110000), uint8_t(0));
        QCOMPARE(classOf(codepointInfo(0x20000)), CharClass::Letter); // CJK ext. B
        QCOMPARE(classOf(codepointInfo(0x1D400)), CharClass::Letter); // 𝐀
    }

    void whitespaceIsTheWhiteSpaceProperty() {
        for (uint32_t cp : {0x09u, 0x0Au, 0x0Bu, 0x0Cu, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u,
                            0x2000u, 0x200Au, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
            QVERIFY2(isWhitespaceInfo(codepointInfo(cp)), qPrintable(QString::number(cp, 16)));
        }
        for (uint32_t cp : {0x1Cu, 0x1Fu, 0x200Bu, 0xFEFFu, 0x180Eu, 0x61u}) {
            QVERIFY2(!isWhitespaceInfo(codepointInfo(cp)), qPrintable(QString::number(cp, 16)));
        }
    }

    void byteLevelAlphabet() {
        std::set<uint32_t> seen;
        for (int b = 0; b < 256; ++b) {
            const uint32_t cp = byteToCodepoint(static_cast<uint8_t>(b));
            QVERIFY(seen.insert(cp).second);
            QCOMPARE(codepointToByte(cp), b);
            std::string utf8;
            appendUtf8(utf8, cp);
            QCOMPARE(std::string(byteToUtf8(static_cast<uint8_t>(b))), utf8);
        }
        QCOMPARE(byteToCodepoint('a'), uint32_t('a'));
        QCOMPARE(byteToCodepoint(' '), uint32_t(0x120));  // Ġ
        QCOMPARE(byteToCodepoint('\n'), uint32_t(0x10A)); // Ċ
        QCOMPARE(byteToCodepoint(0xAD), uint32_t(0x143)); // the last stand-in
        QCOMPARE(codepointToByte(0x144), -1);
        QCOMPARE(codepointToByte(0x4E2D), -1);
        std::string spelled;
        appendByteLevel(spelled, "a b\n");
        QCOMPARE(spelled, std::string("a\xC4\xA0" "b\xC4\x8A"));
    }

    void preTokenizerNames() {
        const PreTokenizerConfig llama = preTokenizerConfig("llama-bpe");
        QCOMPARE(llama.kind, PreTokenizerKind::Llama3);
        QVERIFY(llama.known && llama.ignoreMerges && llama.forceAddBos && llama.cleanSpaces);
        const PreTokenizerConfig qwen = preTokenizerConfig("qwen2");
        QCOMPARE(qwen.kind, PreTokenizerKind::Qwen2);
        QVERIFY(!qwen.cleanSpaces && !qwen.ignoreMerges && !qwen.forceAddBos);
        QCOMPARE(preTokenizerConfig("smollm").kind, PreTokenizerKind::Starcoder);
        QCOMPARE(preTokenizerConfig("gpt-4o").kind, PreTokenizerKind::Gpt4o);
        QVERIFY(preTokenizerConfig("gpt-4o").byteLevel &&
                !preTokenizerConfig("gpt-4o").cleanSpaces);
        QCOMPARE(preTokenizerConfig("kanana2").kind, PreTokenizerKind::Gpt4o);
        const PreTokenizerConfig gemma = preTokenizerConfig("gemma4");
        QCOMPARE(gemma.kind, PreTokenizerKind::Gemma4);
        QVERIFY(!gemma.byteLevel && gemma.escapeSpaces && gemma.alwaysAddBos && gemma.cleanSpaces);
        QVERIFY(!qwen.escapeSpaces && !qwen.alwaysAddBos);
        QCOMPARE(preTokenizerConfig("qwen35").kind, PreTokenizerKind::Qwen35);
        const PreTokenizerConfig tekken = preTokenizerConfig("tekken");
        QCOMPARE(tekken.kind, PreTokenizerKind::Tekken);
        QVERIFY(tekken.ignoreMerges && tekken.forceAddBos && !tekken.cleanSpaces);
        QCOMPARE(preTokenizerConfig("deepseek-llm").kind, PreTokenizerKind::DeepseekLlm);
        QCOMPARE(preTokenizerConfig("deepseek-coder").kind, PreTokenizerKind::DeepseekCoder);
        QCOMPARE(preTokenizerConfig("falcon").kind, PreTokenizerKind::Falcon);
        QCOMPARE(preTokenizerConfig("gpt-2").kind, PreTokenizerKind::Gpt2);
        QCOMPARE(preTokenizerConfig("default").kind, PreTokenizerKind::Default);
        const PreTokenizerConfig unknown = preTokenizerConfig("no-such-tokenizer");
        QVERIFY(!unknown.known);
        QCOMPARE(unknown.kind, PreTokenizerKind::Default);
        QVERIFY(preTokenizerConfig("").known);
    }

    void splitLlama3() {
        using K = PreTokenizerKind;
        COMPARE_SPLIT(K::Llama3, "Hello world's 12345!!\n\n  x",
                      {"Hello", " world", "'s", " ", "123", "45", "!!\n\n", " ", " x"});
        // Contractions are case-insensitive; a non-letter may lead a letter run.
        COMPARE_SPLIT(K::Llama3, "DON'T we'LL", {"DON", "'T", " we", "'LL"});
        COMPARE_SPLIT(K::Llama3, "(abc) \"x\"", {"(abc", ")", " \"", "x", "\""});
        // \s*[\r\n]+ takes whitespace up to the last newline of a run.
        COMPARE_SPLIT(K::Llama3, "a \n \n b", {"a", " \n \n", " b"});
        COMPARE_SPLIT(K::Llama3, "end   ", {"end", "   "});
        COMPARE_SPLIT(K::Llama3, "", {});
    }

    void splitQwen2AndQwen35() {
        COMPARE_SPLIT(PreTokenizerKind::Qwen2, "x 2024年",
                      {"x", " ", "2", "0", "2", "4", "年"});
        // Qwen 3.5 keeps combining marks inside letter runs.
        COMPARE_SPLIT(PreTokenizerKind::Qwen2, "e\xCC\x81x", {"e", "\xCC\x81x"});
        COMPARE_SPLIT(PreTokenizerKind::Qwen35, "e\xCC\x81x", {"e\xCC\x81x"});
    }

    void splitGemma4() {
        // Runs of newlines, and everything between them (\r included) as one word.
        COMPARE_SPLIT(PreTokenizerKind::Gemma4, "a b\n\nc\r\nd  \n",
                      {"a b", "\n\n", "c\r", "\n", "d  ", "\n"});
        COMPARE_SPLIT(PreTokenizerKind::Gemma4, "\n", {"\n"});
    }

    void splitGpt2() {
        using K = PreTokenizerKind;
        COMPARE_SPLIT(K::Gpt2, "Hello world's 12345!!\n\n  x",
                      {"Hello", " world", "'s", " 12345", "!!", "\n\n ", " x"});
        // Case-sensitive contractions.
        COMPARE_SPLIT(K::Gpt2, "DON'T don't", {"DON", "'", "T", " don", "'t"});
    }

    void splitGpt4o() {
        COMPARE_SPLIT(PreTokenizerKind::Gpt4o, "HelloWorld camelCase ABCdef don't 12345",
                      {"Hello", "World", " camel", "Case", " ABCdef", " don't", " ", "123",
                       "45"});
        // A path keeps its slashes with the punctuation run; newlines follow it.
        COMPARE_SPLIT(PreTokenizerKind::Gpt4o, "a/b//\n", {"a", "/b", "//\n"});
        // Tekken: the same letter shapes, no contractions, single digits.
        COMPARE_SPLIT(PreTokenizerKind::Tekken, "HelloWorld don't 2024",
                      {"Hello", "World", " don", "'t", " ", "2", "0", "2", "4"});
    }

    void splitDefaultAndFalcon() {
        using K = PreTokenizerKind;
        COMPARE_SPLIT(K::Default, "a+b=12345 $x",
                      {"a", "+", "b", "=", "123", "45", " ", "$", "x"});
        COMPARE_SPLIT(K::Falcon, "a+b=12345 $x",
                      {"a", "+", "b", "=", "123", "45", " ", "$", "x"});
        // Falcon's punctuation class includes the backtick; the default one does not.
        COMPARE_SPLIT(K::Default, "x``y", {"x", "``", "y"});
        COMPARE_SPLIT(K::Falcon, "x``y", {"x", "``", "y"});
        COMPARE_SPLIT(K::Default, "x.``", {"x", ".", "``"});
        COMPARE_SPLIT(K::Falcon, "x.``", {"x", ".``"});
    }

    void splitStarcoder() {
        COMPARE_SPLIT(PreTokenizerKind::Starcoder, "x 123", {"x", " ", "1", "2", "3"});
    }

    void splitDeepseek() {
        using K = PreTokenizerKind;
        COMPARE_SPLIT(K::DeepseekLlm, "Hello, 世界! 123\n",
                      {"Hello", ",", " ", "世界", "!", " ", "123", "\n"});
        COMPARE_SPLIT(K::DeepseekCoder, "foo(1, 23)\n",
                      {"foo", "(", "1", ",", " ", "2", "3", ")", "\n"});
    }

    void splitIsLinearOnHostileInput() {
        // Long runs that make naive matchers quadratic.
        const std::string spaces(200000, ' ');
        const std::string letters(200000, 'A');
        QElapsedTimer timer;
        timer.start();
        for (auto kind : {PreTokenizerKind::Llama3, PreTokenizerKind::Gpt4o,
                          PreTokenizerKind::Tekken, PreTokenizerKind::Qwen35,
                          PreTokenizerKind::DeepseekLlm, PreTokenizerKind::Default}) {
            QCOMPARE(split(kind, spaces + "x").size(), size_t(2));
            QVERIFY(!split(kind, letters + "é").empty());
        }
        QCOMPARE(split(PreTokenizerKind::Gemma4, spaces + "x\n" + letters).size(), size_t(3));
        QVERIFY2(timer.elapsed() < 5000, "splitting long runs took too long");
    }
};

QTEST_GUILESS_MAIN(TestTokenizerText)
#include "test_tokenizer_text.moc"
