// Tests against llama.cpp itself: the test vectors that ship with its source for the qwen35,
// gemma-4 and bert-bge (WordPiece) vocabularies, Gemma 4's and BERT's special tokens, and many
// texts tokenized by the reference tokenizer (ref-tokenize.mjs over the prebuilt llama.cpp) for
// o200k ("gpt-4o", the pre name of gpt-oss vocabularies), qwen35, gemma-4 and bert-bge (also
// with its normalizer switched off). The llama.cpp files are found under HEARTH_REF
// (default ~/.cache/hearth-ref); a missing file or a missing node skips with the reason.
#include "test_support.h"
#include "test_tokenizer_support.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <map>
#include <random>

using namespace hearth;
using namespace hearth::test;
using hearth::tokenizer::DecodeOptions;
using hearth::tokenizer::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

QString refDir() {
    const QByteArray env = qgetenv("HEARTH_REF");
    return env.isEmpty() ? QDir::homePath() + QStringLiteral("/.cache/hearth-ref")
                         : QString::fromLocal8Bit(env);
}

// A vocabulary from llama.cpp's source tree: models/ggml-vocab-NAME.gguf.
QString refVocabPath(const QString& name) {
    return refDir() + QStringLiteral("/llama.cpp-src/models/ggml-vocab-%1.gguf").arg(name);
}

// Loaded once per run; nullptr when the file does not load.
const Tokenizer* loadOnce(const QString& path) {
    static std::map<QString, std::optional<Tokenizer>> cache;
    auto it = cache.find(path);
    if (it == cache.end()) {
        std::optional<Tokenizer> loaded;
        auto file = gguf::File::open(path.toStdString());
        if (file) {
            auto t = Tokenizer::fromGguf(*file);
            if (t) {
                loaded = std::move(*t);
            } else {
                qWarning("%s: %s", qPrintable(path), t.status().toString().c_str());
            }
        } else {
            qWarning("%s: %s", qPrintable(path), file.status().toString().c_str());
        }
        it = cache.emplace(path, std::move(loaded)).first;
    }
    return it->second ? &*it->second : nullptr;
}

Ids encode(const Tokenizer& t, std::string_view text, bool addSpecial = false,
           bool parseSpecial = false) {
    auto ids = t.encode(text, addSpecial, parseSpecial);
    return ids ? *ids : Ids{-999};
}

// Texts that walk the branches of the split rules: contractions in every case, digit runs of
// one to six, CJK, emoji, accented capitals and lowercase runs, combining marks, whitespace
// and newline runs, punctuation, paths and code.
std::vector<std::string> handWrittenTexts() {
    return {
        "don't DON'T Don'T dOn't",
        "we'LL I'm you're they've she'd it's IT'S He'S",
        "'s 'S 't 're 'RE 've 'VE 'm 'M 'll 'LL 'd 'D",
        "x' 'x '' ''s",
        "O'Neil rock'n'roll",
        "l'\xC3\xA9t\xC3\xA9 \xC3\x89'S \xC3\xA9'll", // l'été É'S é'll
        "1 12 123 1234 12345 123456",
        "3.14159 1,000,000 -42 +7 1e10 0x1F",
        "\xD9\xA3\xD9\xA4\xD9\xA5\xD9\xA6 x\xC2\xB2\xC2\xB3 \xE2\x85\xAB 12ab34", // ٣٤٥٦ x²³ Ⅻ
        "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9"
        "\xE3\x83\x88", // 日本語のテキスト
        "\xE4\xB8\xAD\xE6\x96\x87\xEF\xBC\x8C\xE6\xA0\x87\xE7\x82\xB9\xE3\x80\x82 abc\xE6\x97\xA5"
        "def", // 中文，标点。 abc日def
        "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xEB\xAC\xB8\xEC\x9E\xA5", // 한국어 문장
        "\xF0\x9F\x98\x80 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD I \xE2\x9D\xA4\xEF\xB8\x8F NY "
        "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8", // 😀 👍🏽 I ❤️ NY 🇺🇸
        "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7!", // 👨‍👩‍👧!
        "\xC3\x80\xC3\x89\xC3\x8E\xC3\xB5\xC3\xBC \xC3\x89"
        "COLE \xC3\xA9"
        "cole \xC3\x89"
        "cole",
        "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC \xCE\x9A\xCE\x95\xCE\x99"
        "\xCE\x9C\xCE\x95\xCE\x9D\xCE\x9F", // Ελληνικά ΚΕΙΜΕΝΟ
        "\xD0\x9F\xD0\xA0\xD0\x98\xD0\x92\xD0\x95\xD0\xA2 \xD0\xBC\xD0\xB8\xD1\x80 "
        "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82",   // ПРИВЕТ мир Привет
        "\xC7\x85ungla \xC3\x9F\xE1\xBA\x9E \xC4\xB0stanbul", // ǅungla ßẞ İstanbul
        "MacDonald iPhone HTTPServer camelCaseWord XMLHttpRequest ABCdef aBC",
        "HELLO'S Hello'S hello's HELLO's",
        "  ",
        "\n",
        "\n\n\n",
        "\t\t",
        " \n \n ",
        "a  b",
        "a   \n  b",
        "trailing   ",
        "\r\n\r\n",
        "x\r\ny",
        "\xC2\xA0nbsp \xE3\x80\x80x \xE2\x80\x83y",
        "!!! ... ?!",
        "a/b/c path/to/file.txt\n",
        "<html><body>",
        "foo() bar[] {baz}",
        "x = y + z; // comment",
        "$100 @user #tag 50% a&b",
        "\xE2\x80\x94"
        "dash\xE2\x80\x93",
        "\xC2\xAB"
        "quote\xC2\xBB \xC2\xBFQu\xC3\xA9?",
        "a//\n\n",
        " //\n/ x",
        "e\xCC\x81 \xCC\x81\xCC\x88 a\xCC\x81\xCC\x81"
        "b", // é (combining) ́̈ á́b
        "\xE0\xA4\xA8\xE0\xA5\x8D\xE0\xA4\xA8 \xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6"
        "\xE0\xA5\x80",                           // न्न हिंदी
        "\xEF\xAC\x81 \xE2\x84\xAA \xE2\x85\xA0", // ﬁ K Ⅰ
        "def foo(x):\n    return x**2\n\n\nclass A:\n\tpass\n",
        "if (a && b) { return; }\n  \n  }",
        "\x01\x02 \x1c\x1f x\x7f",
        "'",
        " '",
        "''",
        "   leading",
        "\n\n  \n\n",
        "end\n",
        "A",
        "a",
        "\xC3\xA9",
        "1",
        " 1",
        "  12",
        "Hello, World! It's 2024-06-01T12:34:56Z.",
        "<|im_start|>user\nhi<|im_end|>",
        "<start_of_turn>model\n<eos></s><unk>",
        "\xE2\x96\x81 already \xE2\x96\x81\xE2\x96\x81 "
        "marked", // ▁ already ▁▁ marked
    };
}

// Deterministic random strings over an alphabet chosen to collide the split rules' branches.
std::vector<std::string> randomTexts(size_t count) {
    static const char* const kPieces[] = {
        "a",
        "b",
        "z",
        "A",
        "B",
        "Z",
        "s",
        "t",
        "re",
        "ve",
        "m",
        "ll",
        "d",
        "S",
        "T",
        "RE",
        "LL",
        "'",
        "'",
        "0",
        "1",
        "9",
        "42",
        " ",
        " ",
        " ",
        "  ",
        "\n",
        "\n",
        "\r",
        "\t",
        ".",
        ",",
        "!",
        "?",
        "/",
        "-",
        "_",
        "(",
        ")",
        "\"",
        "<",
        ">",
        "$",
        "+",
        "=",
        "`",
        "~",
        "\xC3\xA9",
        "\xC3\x89",
        "\xC3\x9F",
        "\xC4\xB0",
        "\xC7\x85", // é É ß İ ǅ
        "\xD0\xB0",
        "\xD0\x90",
        "\xCE\xB1",
        "\xCE\x91", // а А α Α
        "\xE6\x97\xA5",
        "\xE8\xAA\x9E",
        "\xED\x95\x9C",
        "\xE3\x81\x82", // 日 語 한 あ
        "\xCC\x81",
        "\xE0\xA5\x8D",
        "\xE0\xA4\xA8", // ́ ् न
        "\xD9\xA3",
        "\xC2\xB2",
        "\xE2\x85\xAB", // ٣ ² Ⅻ
        "\xC2\xA0",
        "\xE3\x80\x80",
        "\xE2\x80\x83", // nbsp, ideographic, em
        "\xF0\x9F\x98\x80",
        "\xE2\x9D\xA4",
        "\xEF\xB8\x8F",
        "\xE2\x80\x8D", // 😀 ❤ VS16 ZWJ
        "\xE2\x80\x94",
        "\xC2\xBF",
        "\xEF\xBC\x8C",
        "\xE3\x80\x82", // — ¿ ， 。
        "\xE2\x96\x81", // ▁
    };
    std::mt19937 rng(20260401);
    std::vector<std::string> texts;
    texts.reserve(count);
    for (size_t i = 0; i < count; ++i) {
        std::string s;
        const size_t pieces = 1 + rng() % 24;
        for (size_t k = 0; k < pieces; ++k) s += kPieces[rng() % std::size(kPieces)];
        texts.push_back(std::move(s));
    }
    return texts;
}

// More texts for WordPiece: accents in every form, CJK next to other scripts, ASCII symbols
// (split) and other symbols (not), control and format characters (dropped without splitting),
// long words that do and do not spell out, and "##" / "▁" / "[UNK]" in the text.
std::vector<std::string> wordPieceTexts() {
    std::vector<std::string> texts = {
        "r\xC3\xA9sum\xC3\xA9 RE\xCC\x81SUME\xCC\x81 na\xC3\xAFve Cr\xC3\xA8me Br\xC3\xBBl\xC3\xA9"
        "e "
        "\xC3\x85ngstr\xC3\xB6m", // résumé RÉSUMÉ naïve Crème Brûlée Ångström
        "\xC3\x98re \xC3\x86sir \xC5\x81\xC3\xB3"
        "d\xC5\xBA \xC3\x9Fstra\xC3\x9F"
        "e \xEF\xAC\x81n", // Øre Æsir Łódź ßtraße ﬁn
        "\xE4\xB8\xAD\xE6\x96\x87"
        "abc\xE6\x97\xA5\xE6\x9C\xAC"
        "123\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA"
        "\xEF\xBC\xA1\xEF\xBC\xA2", // 中文abc日本123ひらがなＡＢ
        // U+20000 U+2B81D U+2C800 (in Extension B, D, and the 0x2B920 range) U+FA0E
        "\xF0\xA0\x80\x80\xF0\xAB\xA0\x9D\xF0\xAC\xA0\x80 \xEF\xA8\x8E",
        "a$b+c<d=e>f^g`h|i~j \xC2\xA2\xC2\xA3\xE2\x82\xAC \xC2\xA9 x\xC2\xB0y \xE2\x84\xA2",
        "a\x01"
        "b\x1f c\x7f\xC2\x80"
        "d e\xE2\x80\x8B"
        "f g\xC2\xADh \xEF\xBB\xBFi j\xEE\x80\x80k", // Cc, ZWSP, SHY, BOM, PUA
        "\xE2\x80\x8B \xE2\x80\x8C\xE2\x80\x8D \xC2\x85x\xE1\x9A\x80y\xE2\x80\xA8z",
        std::string("nul\0inside", 10),
        "\xF0\x9F\xA6\x99 \xF0\x9F\x98\x80smile \xE2\x9D\xA4\xEF\xB8\x8F "
        "\xF0\x9F\x87\xAB\xF0\x9F\x87\xB7",
        "unbelievably antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        "hello\xE2\x98\x83world snow\xE2\x98\x83 \xE2\x98\x83",
        "##ing ## #hash \xE2\x96\x81hello \xE2\x96\x81\xE2\x96\x81 [UNK] [CLS] [unused0]",
        // 가나다 한국어
        "\xEA\xB0\x80\xEB\x82\x98\xEB\x8B\xA4 \xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",
        "\xCE\x86\xCE\xBB\xCF\x86\xCE\xB1 \xD0\x81\xD0\xBB\xD0\xBA\xD0\xB0 \xC4\xB0i\xC4\xB1I "
        "\xC7\x85", // Άλφα Ёлка İiıI ǅ
        "\xD8\xA7\xD9\x84\xD8\xB9\xD9\x8E\xD8\xB1\xD9\x8E\xD8\xA8\xD9\x90\xD9\x8A\xD9\x8E\xD9\x91"
        "\xD8\xA9 "
        "\xE0\xA4\xB9\xE0\xA4\xBF\xE0\xA4\x82\xE0\xA4\xA6\xE0\xA5\x80 "
        "\xE0\xB8\xA0\xE0\xB8\xB2\xE0\xB8\xA9\xE0\xB8\xB2",
        "it's O'Neil's \"quoted\" (paren) [bracket] {brace} \xE2\x80\x9Csmart\xE2\x80\x9D "
        "\xE2\x80\x94 a\xE2\x80\xA6",
        "3.14 1,000 2024-06-01 12:30 50% #1 @me a_b a-b a/b",
    };
    texts.push_back(std::string(300, 'a'));
    texts.push_back("x" + std::string(2000, 'b') + " y");
    std::string longWord;
    for (int i = 0; i < 200; ++i) longWord += "the";
    texts.push_back(longWord);
    return texts;
}

std::vector<std::string> differentialTexts(bool wordPiece = false) {
    std::vector<std::string> texts = handWrittenTexts();
    if (wordPiece) {
        for (std::string& s : wordPieceTexts()) texts.push_back(std::move(s));
    }
    for (std::string& s : randomTexts(500)) texts.push_back(std::move(s));
    return texts;
}

// A byte-level vocabulary that makes word boundaries visible in the ids: the 256 byte tokens,
// every pair of them as a token, and one merge per pair in a shuffled order. Pairs merge only
// inside a word, so a word split in another place changes the ids. The other metadata (which
// the reference needs to load the file) comes from `base`.
gguf::Writer pairVocab(const gguf::File& base, const std::string& pre) {
    VocabSpec spec = byteLevelVocab(pre);
    std::vector<std::pair<int, int>> pairs;
    for (int a = 0; a < 256; ++a) {
        for (int b = 0; b < 256; ++b) pairs.emplace_back(a, b);
    }
    std::shuffle(pairs.begin(), pairs.end(), std::mt19937(7));
    std::vector<std::string> merges;
    for (auto [a, b] : pairs) {
        const std::string left(tokenizer::byteToUtf8(uint8_t(a)));
        const std::string right(tokenizer::byteToUtf8(uint8_t(b)));
        spec.add(left + right);
        merges.push_back(left + " " + right);
    }
    spec.merges = std::move(merges);
    gguf::Writer w(base.version());
    for (const gguf::KeyValue& kv : base.metadata()) {
        if (kv.key.rfind("tokenizer.", 0) != 0) w.set(kv.key, kv.value);
    }
    const gguf::Writer vocab = writerFor(spec);
    for (const char* key :
         {"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
          "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}) {
        w.set(key, *vocab.find(key));
    }
    return w;
}

// Token ids of each text from the reference tokenizer (add_special and parse_special off).
// Returns false with `why` set when the reference cannot be run here (a reason to skip).
bool referenceIds(const QString& vocab, const std::vector<std::string>& texts,
                  std::vector<Ids>& ids, QString& why) {
    const QString node = QStandardPaths::findExecutable(QStringLiteral("node"));
    const QString script = testDataDir() + QStringLiteral("/tools/reference/ref-tokenize.mjs");
    const QString harness = refDir() + QStringLiteral("/node_modules/node-llama-cpp");
    if (node.isEmpty())
        why = QStringLiteral("node is not on PATH");
    else if (!QFileInfo::exists(script))
        why = QStringLiteral("%1 not found").arg(script);
    else if (!QFileInfo::exists(harness))
        why = QStringLiteral("%1 not found").arg(harness);
    if (!why.isEmpty()) return false;

    QTemporaryDir dir;
    const QString casesPath = dir.filePath(QStringLiteral("cases.inp"));
    {
        std::string joined;
        for (size_t i = 0; i < texts.size(); ++i) {
            joined += (i ? "\n__ggml_vocab_test__\n" : "") + texts[i];
        }
        QFile f(casesPath);
        if (!f.open(QIODevice::WriteOnly)) {
            why = QStringLiteral("cannot write %1").arg(casesPath);
            return false;
        }
        f.write(joined.data(), qint64(joined.size()));
    }
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("REF_HARNESS"), refDir());
    p.setProcessEnvironment(env);
    p.start(node, {script, vocab, QStringLiteral("--cases"), casesPath});
    if (!p.waitForFinished(180000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        // The reference is installed but failed: that is a test failure, not a skip.
        qWarning("reference tokenizer failed: %s", p.readAllStandardError().constData());
        ids.clear();
        return true;
    }
    const std::vector<std::string> lines = [&] {
        std::vector<std::string> out;
        std::istringstream in(p.readAllStandardOutput().toStdString());
        std::string line;
        while (std::getline(in, line)) out.push_back(line);
        return out;
    }();
    ids.clear();
    for (const std::string& line : lines) ids.push_back(parseIds(line));
    return true;
}

} // namespace

#define SKIP_UNLESS_EXISTS(path)                                                                   \
    if (!QFileInfo::exists(path))                                                                  \
    QSKIP(qPrintable(QStringLiteral("reference file not found: %1 (set HEARTH_REF)").arg(path)))

class TestTokenizerRef : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void testVectors_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("qwen35") << QStringLiteral("qwen35");
        QTest::newRow("gemma-4") << QStringLiteral("gemma-4");
        QTest::newRow("bert-bge") << QStringLiteral("bert-bge");
    }

    // Every case of llama.cpp's .inp/.out pair, add_special and parse_special off; then the
    // raw decode of our ids gives the text back (WordPiece, which normalizes the text: the
    // decoded text encodes to the same ids).
    void testVectors() {
        QFETCH(QString, name);
        const QString path = refVocabPath(name);
        SKIP_UNLESS_EXISTS(path);
        SKIP_UNLESS_EXISTS(path + QStringLiteral(".inp"));
        SKIP_UNLESS_EXISTS(path + QStringLiteral(".out"));
        QElapsedTimer timer;
        timer.start();
        const Tokenizer* t = loadOnce(path);
        QVERIFY2(t != nullptr, "the vocabulary failed to load");
        qInfo("%s: loaded in %lld ms", qPrintable(name), timer.elapsed());
        size_t cases = 0;
        const std::vector<TokenizerVector> vectors =
            readTokenizerVectors(path.toStdString(), &cases);
        QVERIFY(!vectors.empty());
        QCOMPARE(vectors.size(), cases);
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
        qInfo("%s: %d/%zu test vectors pass", qPrintable(name), passed, vectors.size());
        QCOMPARE(passed, int(vectors.size()));
        DecodeOptions raw;
        raw.cleanSpaces = false;
        const bool wordPiece = t->modelType() == tokenizer::ModelType::Wpm;
        for (const TokenizerVector& v : vectors) {
            auto text = t->decode(v.ids, raw);
            QVERIFY(text.isOk());
            if (!wordPiece) {
                QCOMPARE(*text, v.text);
            } else if (std::find(v.ids.begin(), v.ids.end(), t->unk()) == v.ids.end()) {
                QCOMPARE(idsString(encode(*t, *text)), idsString(v.ids));
            }
        }
    }

    // BERT's WordPiece (bge-small): [CLS] as BOS and [SEP] after the text when adding special
    // tokens, [UNK] for words the vocabulary cannot spell, "##"-less continuation pieces, and
    // decoding with the word-start mark as a space and the clean-up rules.
    void wordPieceVocabulary() {
        const QString path = refVocabPath(QStringLiteral("bert-bge"));
        SKIP_UNLESS_EXISTS(path);
        const Tokenizer* t = loadOnce(path);
        QVERIFY(t != nullptr);
        QCOMPARE(t->modelType(), tokenizer::ModelType::Wpm);
        QCOMPARE(t->modelName(), std::string("bert"));
        QCOMPARE(t->preTokenizerName(), std::string("bert-bge"));
        QCOMPARE(t->bos(), 101);
        QCOMPARE(t->eos(), tokenizer::kNoToken);
        QCOMPARE(t->unk(), 100);
        QCOMPARE(t->sep(), 102);
        QCOMPARE(t->pad(), 0);
        QVERIFY(t->addBos() && t->addSep() && !t->addEos() && !t->addSpacePrefix());
        QVERIFY(t->warnings().empty());
        // Expected ids from the reference tokenizer (ref-tokenize.mjs ... [--special]).
        QCOMPARE(encode(*t, "Hello World [CLS] x"),
                 (Ids{7592, 2088, 1031, 18856, 2015, 1033, 1060}));
        QCOMPARE(encode(*t, "Hello World [CLS] x", true, true),
                 (Ids{101, 7592, 2088, 101, 1060, 102}));
        QCOMPARE(encode(*t, "", true), (Ids{101, 102}));
        QCOMPARE(encode(*t, ""), Ids{});
        QCOMPARE(encode(*t, " \t\n\x01 "), Ids{});
        // A word with a character the vocabulary lacks is one [UNK], whatever its length.
        QCOMPARE(encode(*t, "hello\xE2\x98\x83world"), Ids{100});
        QCOMPARE(encode(*t, "snow\xE2\x98\x83 man"), (Ids{100, 2158}));
        // Invalid UTF-8 is dropped without splitting the word; an overlong "/" is still "/", as
        // llama.cpp's lenient decoder reads it.
        QCOMPARE(encode(*t, "hel\xFFlo wor\xE2\x82ld"), encode(*t, "hello world"));
        QCOMPARE(encode(*t, std::string("a\xC0\xAF") + "b"), encode(*t, "a/b"));
        // Decoding: word starts become spaces, continuation pieces join, special tokens show
        // only when rendered, and the clean-up rules remove the space before punctuation.
        const Ids ids = encode(*t, "Tokenization, unbelievably!", true);
        DecodeOptions render;
        render.renderSpecial = true;
        QCOMPARE(*t->decode(ids), std::string(" tokenization, unbelievably!"));
        QCOMPARE(*t->decode(ids, render),
                 std::string("[CLS] tokenization, unbelievably![SEP]"));
        DecodeOptions raw;
        raw.cleanSpaces = false;
        QCOMPARE(*t->decode(ids, raw), std::string(" tokenization , unbelievably !"));
        QCOMPARE(*t->decode(encode(*t, "it 's a ' b ' don't")), std::string(" it's a'b'don't"));
        QCOMPARE(*t->decode(Ids{101, 1060, 100, 1061, 102}, render),
                 std::string("[CLS] x[UNK] y[SEP]"));
        // No word length limit: a 1 MB word is cut in one pass (llama.cpp gives the same ids:
        // the long texts of the differential test cover this path).
        QElapsedTimer timer;
        timer.start();
        const Ids longWord = encode(*t, std::string(1 << 20, 'q'));
        QVERIFY(!longWord.empty() && longWord.front() != t->unk());
        QVERIFY(std::all_of(longWord.begin(), longWord.end(),
                            [&](int32_t id) { return id > 0 && id < t->vocabSize(); }));
        qInfo("bert-bge: a 1 MB word in %lld ms, %zu tokens", timer.elapsed(), longWord.size());
        QCOMPARE(t->tokenPiece(7592), std::string(" hello"));
        QCOMPARE(t->tokenPiece(100, false), std::string());
        QCOMPARE(t->tokenPiece(100), std::string("[UNK]"));
    }

    // Gemma 4: BPE with SentencePiece-style spaces, BOS always added, end-of-turn tokens.
    void gemma4Vocabulary() {
        const QString path = refVocabPath(QStringLiteral("gemma-4"));
        SKIP_UNLESS_EXISTS(path);
        const Tokenizer* t = loadOnce(path);
        QVERIFY(t != nullptr);
        QCOMPARE(t->modelType(), tokenizer::ModelType::Bpe);
        QCOMPARE(t->modelName(), std::string("gemma4"));
        QCOMPARE(t->bos(), 2);
        QCOMPARE(t->eos(), 1);
        QCOMPARE(t->pad(), 0);
        QVERIFY(t->addBos() && !t->addEos() && !t->addSpacePrefix());
        // <eos>, <turn|> and <|tool_response> end generation; "</s>" is plain text here.
        QVERIFY(t->isEog(1) && t->isEog(106) && t->isEog(50));
        QVERIFY(!t->isEog(212));
        QCOMPARE(t->tokenType(212), tokenizer::TokenType::Normal);
        QCOMPARE(t->tokenType(50), tokenizer::TokenType::Control);
        // Expected ids from the reference tokenizer (ref-tokenize.mjs ... --special).
        const std::string turn = "<|turn>user\nHello world<turn|>\n";
        QCOMPARE(encode(*t, turn, true, true), (Ids{2, 105, 2364, 107, 9259, 1902, 106, 107}));
        QCOMPARE(encode(*t, turn), (Ids{236820, 236909, 887, 236813, 2364, 107, 9259, 1902, 236820,
                                        887, 111038, 107}));
        // User-defined tokens (<|tool_call>, <|"|>, <|channel>) match without parse_special;
        // control ones (<|turn>) and <|tool_response>, made control as an end of generation,
        // only with it.
        const std::string tool = "<|tool_call>call:f{a:<|\"|>x<|\"|>}<tool_call|><|tool_response> "
                                 "<|turn>model\n<|channel>thought<channel|>ok<turn|></s>";
        QCOMPARE(encode(*t, tool),
                 (Ids{48,  6639,   236787, 236760, 236782, 236746, 236787, 52,    236781,
                      52,  236783, 49,     236820, 236909, 13205,  236779, 6275,  236813,
                      655, 236909, 887,    236813, 4368,   107,    100,    45518, 101,
                      680, 236820, 887,    236909, 2588,   236751, 236813}));
        QCOMPARE(encode(*t, tool, false, true),
                 (Ids{48,    6639,   236787, 236760, 236782, 236746, 236787, 52,  236781,
                      52,    236783, 49,     50,     236743, 105,    4368,   107, 100,
                      45518, 101,    680,    106,    954,    236751, 236813}));
        // Spaces come back from U+2581; a byte token gives its byte.
        QCOMPARE(*t->decode(Ids{9259, 1902}), std::string("Hello world"));
        QCOMPARE(*t->decode(Ids{248}), std::string("\n"));
        const std::string emoji = "a \xF0\x9F\xAB\xA8 b";
        QCOMPARE(*t->decode(encode(*t, emoji)), emoji);
    }

    void referenceDifferential_data() {
        // A vocab file, or "PRE" (llama-bpe's tokens and merges with tokenizer.ggml.pre = PRE),
        // or "pairs:PRE" (see pairVocab).
        QTest::addColumn<QString>("vocab");
        QTest::newRow("gpt-4o") << QStringLiteral("gpt-4o");
        QTest::newRow("gpt-4o pairs") << QStringLiteral("pairs:gpt-4o");
        QTest::newRow("qwen35") << refVocabPath(QStringLiteral("qwen35"));
        QTest::newRow("qwen35 pairs") << QStringLiteral("pairs:qwen35");
        QTest::newRow("gemma-4") << refVocabPath(QStringLiteral("gemma-4"));
        // bert-bge as is, and with its normalizer settings changed: "wpm:LOWER:STRIP".
        QTest::newRow("bert-bge") << refVocabPath(QStringLiteral("bert-bge"));
        QTest::newRow("bert-bge cased") << QStringLiteral("wpm:0:0");
        QTest::newRow("bert-bge lowercase, accents kept") << QStringLiteral("wpm:1:0");
        QTest::newRow("bert-bge accents stripped, cased") << QStringLiteral("wpm:0:1");
    }

    // Many texts through our tokenizer and the reference one: every id must agree.
    void referenceDifferential() {
        QFETCH(QString, vocab);
        QTemporaryDir dir;
        const Tokenizer* t = nullptr;
        std::optional<Tokenizer> built;
        bool wordPiece = vocab.contains(QStringLiteral("bert"));
        if (vocab.startsWith(QStringLiteral("wpm:"))) {
            // bert-bge with tokenizer.ggml.normalizer.lowercase / .strip_accents set.
            const QString base = refVocabPath(QStringLiteral("bert-bge"));
            SKIP_UNLESS_EXISTS(base);
            auto file = gguf::File::open(base.toStdString());
            QVERIFY(file.isOk());
            gguf::Writer w(file->version());
            for (const gguf::KeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
            w.set("tokenizer.ggml.normalizer.lowercase", gguf::Value::boolean(vocab[4] == '1'));
            w.set("tokenizer.ggml.normalizer.strip_accents",
                  gguf::Value::boolean(vocab[6] == '1'));
            vocab = dir.filePath(QStringLiteral("vocab.gguf"));
            QVERIFY(w.writeFile(vocab.toStdString()).isOk());
            auto loaded = loadTokenizer(w);
            QVERIFY(loaded.isOk());
            built = std::move(*loaded);
            t = &*built;
            wordPiece = true;
        } else if (!vocab.endsWith(QStringLiteral(".gguf"))) {
            // Built here and written to a file for the reference to load too.
            const QString shared = QString::fromStdString(
                testDataPath(QStringLiteral("models/ggml-vocab-llama-bpe.gguf")));
            const QString base =
                QFileInfo::exists(shared) ? shared : refVocabPath(QStringLiteral("llama-bpe"));
            SKIP_UNLESS_EXISTS(base);
            auto file = gguf::File::open(base.toStdString());
            QVERIFY(file.isOk());
            const bool pairs = vocab.startsWith(QStringLiteral("pairs:"));
            const std::string pre = vocab.mid(pairs ? 6 : 0).toStdString();
            gguf::Writer w(file->version());
            if (pairs) {
                w = pairVocab(*file, pre);
            } else {
                for (const gguf::KeyValue& kv : file->metadata()) w.set(kv.key, kv.value);
                w.set("tokenizer.ggml.pre", gguf::Value::string(pre));
            }
            vocab = dir.filePath(QStringLiteral("vocab.gguf"));
            QVERIFY(w.writeFile(vocab.toStdString()).isOk());
            auto loaded = loadTokenizer(w);
            QVERIFY(loaded.isOk());
            QCOMPARE(loaded->preTokenizerName(), pre);
            built = std::move(*loaded);
            t = &*built;
        } else {
            SKIP_UNLESS_EXISTS(vocab);
            t = loadOnce(vocab);
            QVERIFY(t != nullptr);
        }
        const std::vector<std::string> texts = differentialTexts(wordPiece);
        std::vector<Ids> want;
        QString why;
        if (!referenceIds(vocab, texts, want, why)) {
            QSKIP(qPrintable(QStringLiteral("reference tokenizer not available: %1").arg(why)));
        }
        QCOMPARE(want.size(), texts.size());
        int passed = 0;
        for (size_t i = 0; i < texts.size(); ++i) {
            const Ids got = encode(*t, texts[i]);
            if (got == want[i]) {
                ++passed;
            } else {
                qWarning("text %s\n  got  %s\n  want %s", texts[i].c_str(), idsString(got).c_str(),
                         idsString(want[i]).c_str());
            }
        }
        qInfo("%s: %d/%zu texts match the reference", QTest::currentDataTag(), passed,
              texts.size());
        QCOMPARE(passed, int(texts.size()));
    }
};

QTEST_GUILESS_MAIN(TestTokenizerRef)
#include "test_tokenizer_ref.moc"
