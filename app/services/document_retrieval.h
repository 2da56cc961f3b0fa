// Retrieval over files too long to give the model whole: a document cut into overlapping chunks
// at paragraph, sentence or word ends, and the chunks ranked for a question by two measures, each
// scaled to [0, 1] over the chunks and averaged: the cosine of embedding vectors
// (EmbeddingService) and BM25 over the words, so that a quoted sentence finds its chunk even with
// a weak embedding model, and a question in other words still finds it by meaning.
#pragma once

#include "services/service_types.h"

#include <QList>
#include <QString>

namespace hearth::app {

struct DocumentChunk {
    QString document;     // the file's name
    int index = 0;        // the chunk's number in its document, from 0
    qsizetype start = 0;  // where it starts in the document's text
    QString text;         // == the document's text.mid(start, text.size())
};

struct ChunkLimits {
    int maxChars = 1200; // a chunk's length at most
    int overlap = 200;   // how far a chunk may reach back into the one before (at a boundary)
};

// The document's chunks, in order, covering all its text. Each ends at the last paragraph break
// (a blank line) within maxChars, else the last sentence end (. ! ? followed by a space or line
// break), else the last space, else at maxChars (a break is looked for in the window's last
// three quarters). The next starts at the first sentence start, else word start, in the chunk's
// last `overlap` characters and its second half, else where it ended. Chunks hold no leading or
// trailing whitespace; a document of whitespace only has none.
QList<DocumentChunk> chunkDocument(const ChatDocument& document, const ChunkLimits& limits = {});

struct RankedChunk {
    int chunk = 0;       // index into the chunks ranked
    double score = 0.0;  // the fused score (higher first)
};

// The `top` chunks for `question`, best first. `chunkVectors` (one per chunk, L2-normalized) and
// `questionVector` may be empty: then only the words rank. Ties keep the chunks' order.
QList<RankedChunk> rankChunks(const QString& question, const QList<DocumentChunk>& chunks,
                              const QList<QList<float>>& chunkVectors, const QList<float>& questionVector, int top);

// The words BM25 counts: lowercased runs of letters and digits.
QStringList retrievalWords(const QString& text);

} // namespace hearth::app
