// Chunking and ranking for retrieval over attached files (see document_retrieval.h).
#include "services/document_retrieval.h"

#include <QHash>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace hearth::app {

namespace {

bool isSpace(QChar c) { return c.isSpace(); }

// A sentence ends at i (exclusive) when text[i-1] is . ! or ? and text[i] is whitespace.
bool sentenceEndsAt(const QString& text, qsizetype i) {
    if (i <= 0 || i >= text.size()) return false;
    const QChar p = text[i - 1];
    return (p == QLatin1Char('.') || p == QLatin1Char('!') || p == QLatin1Char('?')) && isSpace(text[i]);
}

// The end (exclusive) of the chunk starting at `from`, at most `maxEnd`.
qsizetype chunkEnd(const QString& text, qsizetype from, qsizetype maxEnd) {
    if (maxEnd >= text.size()) return text.size();
    // The break must leave something: search the second half of the window first for each kind.
    const qsizetype floor = from + (maxEnd - from) / 4;
    for (qsizetype i = maxEnd; i > floor; --i) // a blank line
        if (text[i - 1] == QLatin1Char('\n') && i >= 2 && text[i - 2] == QLatin1Char('\n')) return i;
    for (qsizetype i = maxEnd; i > floor; --i)
        if (sentenceEndsAt(text, i)) return i;
    for (qsizetype i = maxEnd; i > floor; --i)
        if (isSpace(text[i - 1])) return i;
    return maxEnd;
}

// Where the next chunk starts: the first sentence start, else word start, in the chunk's last
// `overlap` characters (and its second half), else at its end.
qsizetype nextStart(const QString& text, qsizetype start, qsizetype end, int overlap) {
    const qsizetype low = std::max(start + (end - start) / 2 + 1, end - qsizetype(overlap));
    for (qsizetype i = low; i < end; ++i)
        if (sentenceEndsAt(text, i)) {
            while (i < end && isSpace(text[i])) ++i;
            if (i < end) return i;
            break;
        }
    for (qsizetype i = low; i < end; ++i)
        if (isSpace(text[i - 1]) && !isSpace(text[i])) return i;
    return end;
}

} // namespace

QList<DocumentChunk> chunkDocument(const ChatDocument& document, const ChunkLimits& limits) {
    QList<DocumentChunk> out;
    const QString& text = document.text;
    const int maxChars = std::max(16, limits.maxChars);
    const int overlap = std::clamp(limits.overlap, 0, maxChars / 2);
    qsizetype start = 0;
    while (start < text.size()) {
        while (start < text.size() && isSpace(text[start])) ++start;
        if (start >= text.size()) break;
        const qsizetype end = chunkEnd(text, start, start + maxChars);
        qsizetype last = end;
        while (last > start && isSpace(text[last - 1])) --last;
        out << DocumentChunk{document.name, int(out.size()), start, text.mid(start, last - start)};
        if (end >= text.size()) break;
        const qsizetype next = nextStart(text, start, end, overlap);
        start = next > start ? next : end;
    }
    return out;
}

QStringList retrievalWords(const QString& text) {
    static const QRegularExpression separators(QStringLiteral("[^\\p{L}\\p{N}]+"));
    return text.toLower().split(separators, Qt::SkipEmptyParts);
}

QList<RankedChunk> rankChunks(const QString& question, const QList<DocumentChunk>& chunks,
                              const QList<QList<float>>& chunkVectors, const QList<float>& questionVector, int top) {
    const qsizetype n = chunks.size();
    if (n == 0 || top <= 0) return {};
    // BM25 (k1 1.2, b 0.75) over the chunks' words.
    QList<QHash<QString, int>> counts(n);
    QHash<QString, int> documentFrequency;
    double totalLength = 0;
    QList<int> lengths(n);
    for (qsizetype i = 0; i < n; ++i) {
        const QStringList words = retrievalWords(chunks[i].text);
        lengths[i] = int(words.size());
        totalLength += double(words.size());
        for (const QString& w : words) ++counts[i][w];
        for (auto it = counts[i].cbegin(); it != counts[i].cend(); ++it) ++documentFrequency[it.key()];
    }
    const double averageLength = std::max(1.0, totalLength / double(n));
    QStringList terms = retrievalWords(question);
    terms.removeDuplicates();
    QList<double> bm25(n, 0.0);
    for (const QString& t : terms) {
        const int df = documentFrequency.value(t);
        if (df == 0) continue;
        const double idf = std::log(1.0 + (double(n) - df + 0.5) / (df + 0.5));
        for (qsizetype i = 0; i < n; ++i) {
            const int tf = counts[i].value(t);
            if (tf == 0) continue;
            bm25[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / averageLength));
        }
    }
    // Cosine of the vectors (normalized: the dot product).
    const bool vectors = !questionVector.isEmpty() && chunkVectors.size() == n;
    QList<double> cosine(n, 0.0);
    if (vectors)
        for (qsizetype i = 0; i < n; ++i) {
            const QList<float>& v = chunkVectors[i];
            const qsizetype d = std::min(v.size(), questionVector.size());
            double dot = 0;
            for (qsizetype k = 0; k < d; ++k) dot += double(v[k]) * double(questionVector[k]);
            cosine[i] = dot;
        }
    // Each measure scaled to [0, 1] over the chunks (min to max), then averaged: a strong match
    // of the words is not outvoted by a vector a little closer, nor the other way round.
    auto scaled = [n](const QList<double>& score, bool fromZero) {
        double low = fromZero ? 0.0 : *std::min_element(score.begin(), score.end());
        const double high = *std::max_element(score.begin(), score.end());
        QList<double> out(n, 0.0);
        if (high - low <= 1e-12) return out;
        for (qsizetype i = 0; i < n; ++i) out[i] = (score[i] - low) / (high - low);
        return out;
    };
    const QList<double> words = scaled(bm25, true);
    const QList<double> near = vectors ? scaled(cosine, false) : QList<double>();
    QList<RankedChunk> out;
    for (qsizetype i = 0; i < n; ++i)
        out << RankedChunk{int(i), vectors ? 0.5 * (words[i] + near[i]) : words[i]};
    std::stable_sort(out.begin(), out.end(), [](const RankedChunk& a, const RankedChunk& b) { return a.score > b.score; });
    if (out.size() > top) out.resize(top);
    return out;
}

} // namespace hearth::app
