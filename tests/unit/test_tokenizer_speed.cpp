// Speed report (label: slow): loading the shared vocabularies and tokenizing 1 MiB of
// English-like text with each. Prints the timings; asserts only that the work was done.
#include "test_support.h"
#include "test_tokenizer_support.h"

#include <QElapsedTimer>
#include <QtTest>

#include <random>

using namespace hearth;
using hearth::tokenizer::Tokenizer;

namespace {

// Deterministic prose: sentences of common words with capitals, commas, numbers and
// paragraph breaks.
std::string englishText(size_t bytes) {
    static const char* const kWords[] = {
        "the", "of", "and", "to", "in", "is", "was", "that", "for", "it", "with", "as", "his",
        "on", "be", "at", "by", "had", "not", "are", "but", "from", "or", "have", "an", "they",
        "which", "one", "you", "were", "her", "all", "she", "there", "would", "their", "we",
        "him", "been", "has", "when", "who", "will", "more", "no", "if", "out", "so", "said",
        "what", "up", "its", "about", "into", "than", "them", "can", "only", "other", "new",
        "some", "could", "time", "these", "two", "may", "then", "do", "first", "any", "my",
        "now", "such", "like", "our", "over", "man", "me", "even", "most", "made", "after",
        "also", "did", "many", "before", "must", "through", "back", "years", "where", "much",
        "your", "way", "well", "down", "should", "because", "each", "just", "those", "people",
        "how", "too", "little", "state", "good", "very", "make", "world", "still", "own", "see",
        "men", "work", "long", "get", "here", "between", "both", "life", "being", "under",
        "never", "day", "same", "another", "know", "while", "last", "might", "us", "great",
        "old", "year", "off", "come", "since", "against", "go", "came", "right", "used",
        "take", "three", "tokenizer", "inference", "engine", "model", "private", "hosting",
        "quantized", "kernel", "scheduler", "server", "weather", "river", "mountain", "quietly",
        "remarkable", "understanding", "nevertheless", "government", "experience", "don't",
        "it's", "they're", "we'll", "I've",
    };
    std::mt19937 rng(42);
    std::string out;
    out.reserve(bytes + 256);
    int sentence = 0;
    while (out.size() < bytes) {
        const int words = 5 + int(rng() % 18);
        for (int i = 0; i < words; ++i) {
            std::string w = kWords[rng() % std::size(kWords)];
            if (i == 0) w[0] = char(std::toupper(static_cast<unsigned char>(w[0])));
            if (rng() % 40 == 0) w = std::to_string(rng() % 100000);
            out += w;
            if (i + 1 < words) out += (rng() % 9 == 0) ? ", " : " ";
        }
        out += (rng() % 12 == 0) ? "? " : ". ";
        if (++sentence % 7 == 0) out += "\n\n";
    }
    out.resize(bytes);
    return out;
}

} // namespace

class TestTokenizerSpeed : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void tokenizeOneMebibyte_data() {
        QTest::addColumn<QString>("path");
        for (const char* name :
             {"ggml-vocab-llama-spm", "ggml-vocab-llama-bpe", "ggml-vocab-qwen2"}) {
            QTest::newRow(name) << QStringLiteral("models/%1.gguf").arg(QLatin1String(name));
        }
    }

    void tokenizeOneMebibyte() {
        QFETCH(QString, path);
        HEARTH_REQUIRE_TEST_FILE(path);
        const std::string text = englishText(1 << 20);
        QElapsedTimer timer;
        timer.start();
        auto file = gguf::File::open(test::testDataPath(path));
        QVERIFY(file.isOk());
        auto t = Tokenizer::fromGguf(*file);
        QVERIFY(t.isOk());
        const qint64 loadMs = timer.elapsed();
        timer.restart();
        auto ids = t->encode(text, false, false);
        const qint64 encodeMs = timer.elapsed();
        QVERIFY(ids.isOk());
        timer.restart();
        auto back = t->decode(*ids);
        const qint64 decodeMs = timer.elapsed();
        QVERIFY(back.isOk());
        qInfo("%s: load %lld ms; encode 1 MiB -> %zu tokens in %lld ms; decode in %lld ms",
              qPrintable(path), loadMs, ids->size(), encodeMs, decodeMs);
        QVERIFY(ids->size() > 100000);
    }
};

QTEST_GUILESS_MAIN(TestTokenizerSpeed)
#include "test_tokenizer_speed.moc"
