// Retrieval over long attached files: chunk boundaries exactly (paragraph, sentence, word, hard
// cut; the overlap from a sentence start; every character covered), the embedding service on a
// synthesized BGE-shaped bert (vectors normalized, one per text, errors said), and ranking: a
// question quoting a sentence of one of 200 synthetic documents finds that document's chunk
// first, by words alone and fused with the embedding model's vectors; a chat's file vectors kept
// in its SQLite store and read back instead of embedded again.
#include "services/chat_folders.h"
#include "services/chat_retrieval.h"
#include "services/document_retrieval.h"
#include "services/embedding_service.h"
#include "services/store.h"

#include "encoder_test_support.h"
#include "store_replies.h"
#include "test_support.h"

#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

using namespace hearth::app;

namespace {

// A BGE-shaped bert (hearth-cli's bert-tiny, F32, the reference's BGE vocabulary) written into
// `dir`: its path; `error` says why it could not be made.
std::string synthBert(const QTemporaryDir& dir, const QString& vocab, QString& error) {
    const std::string model = dir.filePath(QStringLiteral("bert-tiny.gguf")).toStdString();
    error = hearth::test::synthPreset(QStringLiteral("bert-tiny"), QStringLiteral("F32"), vocab, model);
    return model;
}

// A synthesized BGE-shaped bert loaded into `service`, and `store` opened in `dir` with one new
// chat (its id in `chat`): "", or why not.
QString bertAndStore(const QTemporaryDir& dir, const QString& vocab, EmbeddingService& service, Store& store,
                     qint64& chat) {
    QString error;
    const std::string model = synthBert(dir, vocab, error);
    if (!error.isEmpty()) return error;
    QSignalSpy loaded(&service, &EmbeddingService::loaded);
    service.load(QString::fromStdString(model), 2);
    if (!loaded.wait(60000)) return QStringLiteral("the bert did not load");
    QSignalSpy opened(&store, &Store::opened);
    if (hearth::test::replyFor(opened, store.open(dir.filePath(QStringLiteral("chats.db")))).isEmpty())
        return QStringLiteral("the store did not open");
    chat = hearth::test::createdConversation(store, {});
    return chat > 0 ? QString() : QStringLiteral("no chat was created");
}

QStringList chunkTexts(const QList<DocumentChunk>& chunks) {
    QStringList out;
    for (const DocumentChunk& c : chunks) out << c.text;
    return out;
}

// Invariants of any chunking: each chunk is the document's text at its start, within the limit,
// trimmed, numbered in order; together they cover every non-space character.
void checkCover(const ChatDocument& doc, const QList<DocumentChunk>& chunks, int maxChars) {
    QList<bool> covered(doc.text.size(), false);
    for (int i = 0; i < chunks.size(); ++i) {
        const DocumentChunk& c = chunks[i];
        QCOMPARE(c.index, i);
        QCOMPARE(c.document, doc.name);
        QCOMPARE(doc.text.mid(c.start, c.text.size()), c.text);
        QVERIFY(c.text.size() <= maxChars);
        QVERIFY(!c.text.isEmpty() && !c.text.front().isSpace() && !c.text.back().isSpace());
        if (i > 0) QVERIFY(c.start > chunks[i - 1].start);
        for (qsizetype k = c.start; k < c.start + c.text.size(); ++k) covered[k] = true;
    }
    for (qsizetype k = 0; k < doc.text.size(); ++k)
        if (!doc.text[k].isSpace()) QVERIFY2(covered[k], qPrintable(QStringLiteral("character %1 not in any chunk").arg(k)));
}

// 200 documents of made-up words (seeded), each a few sentences; a sentence of each to quote.
struct Corpus {
    QList<ChatDocument> documents;
    QStringList quotes; // quotes[i] is a sentence of documents[i]
};

Corpus syntheticCorpus() {
    QRandomGenerator rng(20261202);
    static const char* const syllables[] = {"ka", "lo", "mi", "ter", "van", "os", "pul", "dri", "zen", "ba",
                                            "qui", "ro", "sel", "tam", "nu", "gor", "fi", "lex", "wa", "pe"};
    QStringList words;
    for (int i = 0; i < 400; ++i) {
        QString w;
        const int n = 2 + int(rng.bounded(2));
        for (int k = 0; k < n; ++k) w += QLatin1String(syllables[rng.bounded(20)]);
        words << w;
    }
    Corpus c;
    for (int d = 0; d < 200; ++d) {
        QStringList sentences;
        const int count = 4 + int(rng.bounded(4));
        for (int s = 0; s < count; ++s) {
            QStringList sentence;
            const int length = 8 + int(rng.bounded(8));
            for (int w = 0; w < length; ++w) sentence << words[rng.bounded(words.size())];
            sentence.front()[0] = sentence.front()[0].toUpper();
            sentences << sentence.join(QLatin1Char(' ')) + QLatin1Char('.');
        }
        c.documents << ChatDocument{QStringLiteral("doc%1.txt").arg(d), sentences.join(QLatin1Char(' '))};
        c.quotes << sentences[rng.bounded(sentences.size())];
    }
    return c;
}

} // namespace

class TestDocumentRetrieval : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentChunksEndAtBoundaries() {
        // Paragraphs first: the blank line within the limit ends the chunk.
        const ChatDocument paragraphs{QStringLiteral("p.md"),
                                      QStringLiteral("First part. It has two sentences.\n\nSecond part is here.\n\nThird.")};
        QList<DocumentChunk> chunks = chunkDocument(paragraphs, {40, 0});
        QCOMPARE(chunkTexts(chunks), (QStringList{QStringLiteral("First part. It has two sentences."),
                                                  QStringLiteral("Second part is here.\n\nThird.")}));
        QCOMPARE(chunks[1].start, qsizetype(35));
        checkCover(paragraphs, chunks, 40);

        // No blank line: the last sentence end; the overlap starts at a sentence start.
        const ChatDocument sentences{QStringLiteral("s.txt"), QStringLiteral("One two three. Four five six. Seven eight nine. Ten.")};
        chunks = chunkDocument(sentences, {32, 16});
        QCOMPARE(chunkTexts(chunks), (QStringList{QStringLiteral("One two three. Four five six."),
                                                  QStringLiteral("Four five six. Seven eight nine."),
                                                  QStringLiteral("eight nine. Ten.")})); // from a word: no sentence starts late enough
        checkCover(sentences, chunks, 32);

        // No sentence end: the last space; a word longer than the limit is cut hard.
        const ChatDocument words{QStringLiteral("w.txt"), QStringLiteral("alpha beta gamma delta epsilon zeta")};
        chunks = chunkDocument(words, {16, 0});
        QCOMPARE(chunkTexts(chunks), (QStringList{QStringLiteral("alpha beta"), QStringLiteral("gamma delta"),
                                                  QStringLiteral("epsilon zeta")}));
        checkCover(words, chunks, 16);
        const ChatDocument solid{QStringLiteral("x.txt"), QString(40, QLatin1Char('x'))};
        chunks = chunkDocument(solid, {16, 4});
        QCOMPARE(chunkTexts(chunks), (QStringList{QString(16, QLatin1Char('x')), QString(16, QLatin1Char('x')),
                                                  QString(8, QLatin1Char('x'))}));
        checkCover(solid, chunks, 16);

        QVERIFY(chunkDocument({QStringLiteral("e.txt"), QStringLiteral(" \n\n \t")}).isEmpty());
        QCOMPARE(chunkDocument({QStringLiteral("short.txt"), QStringLiteral("  Just this.  ")}).size(), 1);
        // A long real-looking document: the invariants hold with the default limits.
        const Corpus corpus = syntheticCorpus();
        ChatDocument joined{QStringLiteral("all.txt"), QString()};
        for (const ChatDocument& d : corpus.documents.mid(0, 40)) joined.text += d.text + QStringLiteral("\n\n");
        chunks = chunkDocument(joined);
        QVERIFY(chunks.size() > 10);
        checkCover(joined, chunks, ChunkLimits{}.maxChars);
    }

    void documentWordsRankAQuotedSentenceFirst() {
        const Corpus corpus = syntheticCorpus();
        QList<DocumentChunk> chunks;
        for (const ChatDocument& d : corpus.documents) chunks += chunkDocument(d, {400, 80});
        QVERIFY(chunks.size() > 200);
        for (int d : {0, 17, 99, 150, 199}) {
            const QList<RankedChunk> top = rankChunks(corpus.quotes[d], chunks, {}, {}, 3);
            QCOMPARE(top.size(), 3);
            QCOMPARE(chunks[top[0].chunk].document, corpus.documents[d].name);
            QVERIFY(chunks[top[0].chunk].text.contains(corpus.quotes[d]));
            QVERIFY(top[0].score > top[1].score || chunks[top[1].chunk].document == corpus.documents[d].name);
        }
        QVERIFY(rankChunks(QStringLiteral("anything"), {}, {}, {}, 3).isEmpty());
        QCOMPARE(retrievalWords(QStringLiteral("Hello, wörld-2 x")), (QStringList{QStringLiteral("hello"), QStringLiteral("wörld"),
                                                                                QStringLiteral("2"), QStringLiteral("x")}));
    }

    // The chat's retrieval by words: only indexed files are searched, the parts come as numbered
    // excerpts, best first; no indexed file gives none.
    void documentRetrievalForAChatByWords() {
        const Corpus corpus = syntheticCorpus();
        ChatDocument big{QStringLiteral("big.txt"), QString(), true, 0};
        for (const ChatDocument& d : corpus.documents.mid(0, 60)) big.text += d.text + QStringLiteral("\n\n");
        const ChatDocument small{QStringLiteral("small.txt"), corpus.documents[100].text};
        ChatRetrieval retrieval;
        QCOMPARE(retrieval.parts(), ChatRetrieval::kDefaultParts);
        retrieval.setChunking({400, 80}, 3);
        QSignalSpy retrieved(&retrieval, &ChatRetrieval::retrieved);
        const quint64 ticket = retrieval.retrieve(corpus.quotes[33], {small, big});
        QVERIFY(retrieved.isEmpty()); // never before retrieve returns
        QVERIFY(retrieved.wait(10000));
        QCOMPARE(retrieved.first().at(0).toULongLong(), ticket);
        const auto excerpts = retrieved.first().at(1).value<QList<ChatDocument>>();
        QCOMPARE(excerpts.size(), 3);
        QCOMPARE(excerpts[0].name, QStringLiteral("big.txt"));
        QVERIFY(excerpts[0].part > 0);
        QVERIFY(excerpts[0].text.contains(corpus.quotes[33]));
        QVERIFY(!excerpts[0].indexed);
        const QList<DocumentChunk> chunks = chunkDocument(big, {400, 80});
        QCOMPARE(chunks[excerpts[0].part - 1].text, excerpts[0].text);
        // The small file is not searched (it went whole), even for its own sentence.
        retrieval.retrieve(corpus.quotes[100], {small});
        QVERIFY(retrieved.wait(10000));
        QVERIFY(retrieved.last().at(1).value<QList<ChatDocument>>().isEmpty());
    }

    void documentEmbeddingsRankWithTheWords() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString vocab = hearth::test::bgeVocabPath();
        if (!QFile::exists(vocab)) QSKIP("the reference's BGE vocabulary is not here (HEARTH_REF)");
        QString error;
        const std::string model = synthBert(dir, vocab, error);
        QVERIFY2(error.isEmpty(), qPrintable(error));

        EmbeddingService service;
        QSignalSpy failedEmbed(&service, &EmbeddingService::failed);
        const quint64 early = service.embed({QStringLiteral("no model yet")});
        QVERIFY(failedEmbed.wait(10000));
        QCOMPARE(failedEmbed.first().at(0).toULongLong(), early);
        QVERIFY(failedEmbed.first().at(1).toString().contains(QStringLiteral("no embedding model")));

        QSignalSpy loaded(&service, &EmbeddingService::loaded);
        QSignalSpy loadFailed(&service, &EmbeddingService::loadFailed);
        service.load(dir.filePath(QStringLiteral("missing.gguf")), 2);
        QVERIFY(loadFailed.wait(30000));
        service.load(QString::fromStdString(model), 2);
        QVERIFY(loaded.wait(60000));
        QCOMPARE(service.dimensions(), 256);
        QVERIFY(service.isLoaded());

        const Corpus corpus = syntheticCorpus();
        QList<DocumentChunk> chunks;
        for (const ChatDocument& d : corpus.documents) chunks += chunkDocument(d, {400, 80});
        QSignalSpy embedded(&service, &EmbeddingService::embedded);
        const quint64 ticket = service.embed(chunkTexts(chunks));
        QVERIFY(embedded.wait(120000));
        QCOMPARE(embedded.first().at(0).toULongLong(), ticket);
        const auto vectors = embedded.first().at(1).value<QList<QList<float>>>();
        QCOMPARE(vectors.size(), chunks.size());
        double norm = 0;
        for (float x : vectors[0]) norm += double(x) * x;
        QVERIFY(std::abs(norm - 1.0) < 1e-3);

        const QList<int> quoted{3, 42, 128, 177};
        QStringList questions;
        for (int d : quoted) questions << corpus.quotes[d];
        service.embed(questions);
        QVERIFY(embedded.wait(60000));
        const auto questionVectors = embedded.last().at(1).value<QList<QList<float>>>();
        QCOMPARE(questionVectors.size(), quoted.size());
        for (int i = 0; i < quoted.size(); ++i) {
            const QList<RankedChunk> top = rankChunks(questions[i], chunks, vectors, questionVectors[i], 5);
            QCOMPARE(chunks[top[0].chunk].document, corpus.documents[quoted[i]].name);
        }
        // The chat's retrieval with the model: the file's chunks embedded once, then only questions.
        ChatRetrieval retrieval(&service);
        retrieval.setChunking({400, 80}, 2);
        ChatDocument big{QStringLiteral("big.txt"), QString(), true, 0};
        for (const ChatDocument& d : corpus.documents.mid(100, 30)) big.text += d.text + QStringLiteral("\n\n");
        QSignalSpy retrieved(&retrieval, &ChatRetrieval::retrieved);
        const int before = int(embedded.size());
        retrieval.retrieve(corpus.quotes[110], {big});
        QVERIFY(retrieved.wait(60000));
        QCOMPARE(int(embedded.size()), before + 2); // the chunks, then the question
        QVERIFY(retrieved.last().at(1).value<QList<ChatDocument>>().first().text.contains(corpus.quotes[110]));
        retrieval.retrieve(corpus.quotes[120], {big});
        QVERIFY(retrieved.wait(60000));
        QCOMPARE(int(embedded.size()), before + 3); // the question only
        QVERIFY(retrieved.last().at(1).value<QList<ChatDocument>>().first().text.contains(corpus.quotes[120]));

        // Memory held is bounded: with room for one file's chunks, a file asked for after another
        // is cut and embedded again (the store, when there is one, would give its vectors back).
        ChatDocument other{QStringLiteral("other.txt"), QString(), true, 0};
        for (const ChatDocument& d : corpus.documents.mid(140, 10)) other.text += d.text + QStringLiteral("\n\n");
        retrieval.setKeptChunks(chunkDocument(big, {400, 80}).size() + 1);
        retrieval.retrieve(corpus.quotes[142], {other});
        QVERIFY(retrieved.wait(60000));
        QCOMPARE(int(embedded.size()), before + 5); // the other file's chunks, the question
        retrieval.retrieve(corpus.quotes[120], {big});
        QVERIFY(retrieved.wait(60000));
        QCOMPARE(int(embedded.size()), before + 7); // let go: embedded again, then the question
        QVERIFY(retrieved.last().at(1).value<QList<ChatDocument>>().first().text.contains(corpus.quotes[120]));

        // Words no chunk holds: the vectors alone decide (a chunk's own vector finds it first).
        for (int c : {5, 250}) {
            const QList<RankedChunk> top = rankChunks(QStringLiteral("zzqx wwvy"), chunks, vectors, vectors[c], 3);
            QCOMPARE(top[0].chunk, c);
        }
    }

    // A chat's file vectors live in its store: a new ChatRetrieval on the same store (the app
    // restarted) embeds only the question and finds the same parts; a changed file is embedded
    // anew; a deleted chat takes its vectors with it.
    void documentVectorsKeptInTheChatStore() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString vocab = hearth::test::bgeVocabPath();
        if (!QFile::exists(vocab)) QSKIP("the reference's BGE vocabulary is not here (HEARTH_REF)");
        EmbeddingService service;
        Store store;
        QSignalSpy saved(&store, &Store::documentIndexSaved);
        QSignalSpy deleted(&store, &Store::conversationDeleted);
        QSignalSpy storeFailed(&store, &Store::failed);
        qint64 chat = 0;
        const QString why = bertAndStore(dir, vocab, service, store, chat);
        QVERIFY2(why.isEmpty(), qPrintable(why));

        const Corpus corpus = syntheticCorpus();
        ChatDocument big{QStringLiteral("big.txt"), QString(), true, 0};
        for (const ChatDocument& d : corpus.documents.mid(60, 20)) big.text += d.text + QStringLiteral("\n\n");
        QSignalSpy embedded(&service, &EmbeddingService::embedded);
        // Asks a fresh retrieval (as after a restart) and returns the excerpts; `texts` gets how
        // many texts each embedding request carried.
        auto ask = [&](const QString& question, const ChatDocument& file, QList<qsizetype>& texts) {
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            QSignalSpy retrieved(&retrieval, &ChatRetrieval::retrieved);
            const qsizetype before = embedded.size();
            retrieval.retrieve(question, {file}, chat);
            if (!retrieved.wait(60000)) return QList<ChatDocument>();
            texts.clear();
            for (qsizetype i = before; i < embedded.size(); ++i)
                texts << embedded[i].at(1).value<QList<QList<float>>>().size();
            return retrieved.last().at(1).value<QList<ChatDocument>>();
        };
        const qsizetype chunks = chunkDocument(big, {400, 80}).size();
        QVERIFY(chunks > 20);
        QList<qsizetype> texts;
        QList<ChatDocument> parts = ask(corpus.quotes[65], big, texts);
        QCOMPARE(texts, (QList<qsizetype>{chunks, 1})); // the file's chunks, then the question
        QVERIFY(!parts.isEmpty() && parts.first().text.contains(corpus.quotes[65]));
        QTRY_COMPARE(saved.size(), 1);

        parts = ask(corpus.quotes[65], big, texts);
        QCOMPARE(texts, QList<qsizetype>{1}); // the question only: the chunks' vectors were read back
        QVERIFY(!parts.isEmpty() && parts.first().text.contains(corpus.quotes[65]));
        const QList<ChatDocument> first = parts;
        parts = ask(corpus.quotes[65], big, texts);
        QCOMPARE(parts, first); // read back bit for bit: the same parts, the same order
        QCOMPARE(saved.size(), 1);

        ChatDocument changed = big;
        changed.text.prepend(QStringLiteral("A new first paragraph about something else entirely.\n\n"));
        parts = ask(corpus.quotes[72], changed, texts);
        QCOMPARE(texts, (QList<qsizetype>{chunkDocument(changed, {400, 80}).size(), 1}));
        QVERIFY(!parts.isEmpty() && parts.first().text.contains(corpus.quotes[72]));
        QTRY_COMPARE(saved.size(), 2);

        // A folder's file prepared ahead of any question (as a folder is once read): its chunks
        // embedded and kept with the chat; a question then waits only for its own vector.
        const QList<ChatDocument>& corpusDocuments = corpus.documents;
        auto folderFile = [&corpusDocuments](const QString& name, int from) {
            ChatDocument d{name, QString(), true, 0};
            for (const ChatDocument& c : corpusDocuments.mid(from, 6)) d.text += c.text + QStringLiteral("\n\n");
            return FolderFile{d.name, documentIndexKey(d), d.text.size(), chunkDocument(d, {400, 80})};
        };
        const FolderFile shelf = folderFile(QStringLiteral("docs/shelf.md"), 150);
        {
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            const qsizetype before = embedded.size();
            const quint64 ticket = retrieval.prepare({shelf}, chat);
            QVERIFY(prepared.wait(60000));
            QCOMPARE(prepared.first().at(0).toULongLong(), ticket);
            QCOMPARE(embedded.size(), before + 1);
            QCOMPARE(embedded.last().at(1).value<QList<QList<float>>>().size(), shelf.chunks.size());
            QTRY_COMPARE(saved.size(), 3);
        }
        { // a new retrieval: the vectors read back from the store
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            QSignalSpy retrieved(&retrieval, &ChatRetrieval::retrieved);
            const qsizetype before = embedded.size();
            retrieval.retrieve(corpus.quotes[152], {}, chat, {shelf});
            QVERIFY(retrieved.wait(60000));
            QCOMPARE(embedded.size(), before + 1); // the question only
            QVERIFY(retrieved.last().at(1).value<QList<ChatDocument>>().first().text.contains(corpus.quotes[152]));
            QCOMPARE(retrieved.last().at(1).value<QList<ChatDocument>>().first().name, shelf.name);

            // Prepared for a chat not yet created: kept with the chat at its first question.
            const FolderFile drawer = folderFile(QStringLiteral("docs/drawer.md"), 170);
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            retrieval.prepare({drawer}, 0);
            QVERIFY(prepared.wait(60000));
            QTest::qWait(50);
            QCOMPARE(saved.size(), 3);
            const qsizetype atQuestion = embedded.size();
            retrieval.retrieve(corpus.quotes[171], {}, chat, {drawer});
            QVERIFY(retrieved.wait(60000));
            QCOMPARE(embedded.size(), atQuestion + 1);
            QTRY_COMPARE(saved.size(), 4);
        }

        // The chat deleted (while the app runs): its vectors go with it, and the retrieval does not
        // try to keep new ones for it (no "could not save" for a chat the user deleted).
        ChatRetrieval live(&service);
        live.setStore(&store);
        live.setChunking({400, 80}, 2);
        QSignalSpy liveRetrieved(&live, &ChatRetrieval::retrieved);
        QVERIFY(!hearth::test::replyFor(deleted, store.deleteConversation(chat)).isEmpty());
        const qsizetype beforeDeleted = embedded.size();
        live.retrieve(corpus.quotes[65], {big}, chat);
        QVERIFY(liveRetrieved.wait(60000));
        QCOMPARE(embedded.size(), beforeDeleted + 2); // gone with the chat: embedded again
        QTest::qWait(100);
        QCOMPARE(saved.size(), 4);
        QCOMPARE(storeFailed.size(), 0);
        // A retrieval made before any deletion it saw would try, and the store refuses it.
        parts = ask(corpus.quotes[65], big, texts);
        QCOMPARE(texts, (QList<qsizetype>{chunks, 1}));
        QTRY_COMPARE(storeFailed.size(), 1);
        QCOMPARE(saved.size(), 4);
    }

    // A folder larger than one embedding request is embedded a batch of whole files at a time:
    // each batch kept in the store at once and said with progress(); batches kept before the app
    // quit half way stay kept, and the next run embeds only the rest.
    void documentFolderIndexedInBatches() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString vocab = hearth::test::bgeVocabPath();
        if (!QFile::exists(vocab)) QSKIP("the reference's BGE vocabulary is not here (HEARTH_REF)");
        EmbeddingService service;
        Store store;
        QSignalSpy saved(&store, &Store::documentIndexSaved);
        qint64 chat = 0;
        const QString why = bertAndStore(dir, vocab, service, store, chat);
        QVERIFY2(why.isEmpty(), qPrintable(why));

        // 12 files of 2 documents each (3-5 chunks a file at 400 characters).
        const Corpus corpus = syntheticCorpus();
        QList<FolderFile> files;
        qsizetype total = 0;
        for (int i = 0; i < 12; ++i) {
            ChatDocument d{QStringLiteral("notes/file%1.md").arg(i), QString(), true, 0};
            for (const ChatDocument& c : corpus.documents.mid(20 + 2 * i, 2)) d.text += c.text + QStringLiteral("\n\n");
            files << FolderFile{d.name, documentIndexKey(d), d.text.size(), chunkDocument(d, {400, 80})};
            total += files.last().chunks.size();
        }
        constexpr qsizetype kBatch = 10;
        QSignalSpy embedded(&service, &EmbeddingService::embedded);
        {
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            retrieval.setEmbedBatch(kBatch);
            QSignalSpy progress(&retrieval, &ChatRetrieval::progress);
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            const quint64 ticket = retrieval.prepare(files, chat);
            QVERIFY(prepared.wait(60000));
            // Requests of whole files, none over the batch unless one file is, in the files' order.
            qsizetype sum = 0;
            QList<qsizetype> sizes;
            for (const QList<QVariant>& e : embedded) sizes << e.at(1).value<QList<QList<float>>>().size();
            for (qsizetype n : sizes) {
                QVERIFY2(n <= kBatch, qPrintable(QString::number(n)));
                sum += n;
            }
            QCOMPARE(sum, total);
            QVERIFY(sizes.size() >= 3);
            // progress after each: cumulative, ending at the total; one save per batch.
            QCOMPARE(progress.size(), sizes.size());
            qsizetype done = 0;
            for (int i = 0; i < progress.size(); ++i) {
                done += sizes[i];
                QCOMPARE(progress[i].at(0).toULongLong(), ticket);
                QCOMPARE(progress[i].at(1).toLongLong(), qint64(done));
                QCOMPARE(progress[i].at(2).toLongLong(), qint64(total));
            }
            QTRY_COMPARE(saved.size(), sizes.size());
        }
        { // everything kept: nothing embedded again
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            const qsizetype before = embedded.size();
            retrieval.prepare(files, chat);
            QVERIFY(prepared.wait(60000));
            QCOMPARE(embedded.size(), before);
        }

        // Another chat: the store is gone after the first batch (as if the app quit there), yet
        // that batch is kept; the next retrieval embeds exactly the rest.
        const qint64 other = hearth::test::createdConversation(store, {});
        QVERIFY(other > 0);
        QList<FolderFile> changed = files;
        for (FolderFile& f : changed) { // other texts: other keys
            ChatDocument d{f.name, QString(), true, 0};
            for (const DocumentChunk& c : f.chunks) d.text += c.text + QStringLiteral(" Changed.\n\n");
            f = FolderFile{d.name, documentIndexKey(d), d.text.size(), chunkDocument(d, {400, 80})};
        }
        qsizetype changedTotal = 0;
        for (const FolderFile& f : changed) changedTotal += f.chunks.size();
        const qsizetype savedBefore = saved.size();
        qint64 keptFirst = 0;
        {
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            retrieval.setEmbedBatch(kBatch);
            // Said once the first batch is kept: from then on nothing more reaches the store.
            connect(&retrieval, &ChatRetrieval::progress, this, [&retrieval, &keptFirst](quint64, qint64 done, qint64) {
                if (keptFirst == 0) keptFirst = done;
                retrieval.setStore(nullptr);
            });
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            retrieval.prepare(changed, other);
            QVERIFY(prepared.wait(60000));
            QTRY_COMPARE(saved.size(), savedBefore + 1);
        }
        QVERIFY(keptFirst > 0 && keptFirst < changedTotal);
        {
            ChatRetrieval retrieval(&service);
            retrieval.setStore(&store);
            retrieval.setChunking({400, 80}, 2);
            retrieval.setEmbedBatch(1000);
            QSignalSpy prepared(&retrieval, &ChatRetrieval::prepared);
            const qsizetype before = embedded.size();
            retrieval.prepare(changed, other);
            QVERIFY(prepared.wait(60000));
            qsizetype again = 0;
            for (qsizetype i = before; i < embedded.size(); ++i) again += embedded[i].at(1).value<QList<QList<float>>>().size();
            QCOMPARE(again, changedTotal - keptFirst); // the batch kept is read back, not embedded
        }
        QTest::qWait(50);
        QCOMPARE(saved.size(), savedBefore + 2); // the rest kept by the second retrieval, once

        // A folder attached to a chat: ChatFolders shows the batches' progress while it indexes.
        QDir folder(dir.filePath(QStringLiteral("notes")));
        QVERIFY(folder.mkpath(QStringLiteral(".")));
        for (int i = 0; i < 12; ++i) {
            QFile f(folder.filePath(QStringLiteral("page%1.md").arg(i)));
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (const ChatDocument& c : corpus.documents.mid(100 + 2 * i, 2)) f.write((c.text + QStringLiteral("\n\n")).toUtf8());
        }
        ChatRetrieval retrieval(&service);
        retrieval.setStore(&store);
        retrieval.setChunking({400, 80}, 2);
        retrieval.setEmbedBatch(kBatch);
        ChatFolders folders(&store);
        folders.setRetrieval(&retrieval);
        folders.show(chat, {});
        QList<std::pair<qint64, qint64>> seen;
        connect(&folders, &ChatFolders::changed, this, [&folders, &seen] {
            const ChatFolders::Folder& f = folders.folders().constFirst();
            if (f.indexing && f.partsToIndex > 0) seen.append({f.partsIndexed, f.partsToIndex});
        });
        QVERIFY(folders.attach(folder.path()));
        QTRY_VERIFY_WITH_TIMEOUT(!folders.reading() && !folders.indexing(), 60000);
        qsizetype folderChunks = 0;
        for (const FolderFile& f : folders.files()) folderChunks += f.chunks.size();
        QVERIFY2(seen.size() >= 2, qPrintable(QString::number(seen.size())));
        for (int i = 0; i < seen.size(); ++i) {
            QCOMPARE(seen[i].second, qint64(folderChunks));
            QVERIFY(seen[i].first > (i ? seen[i - 1].first : 0));
        }
        QCOMPARE(seen.last().first, qint64(folderChunks));
    }
};

QTEST_GUILESS_MAIN(TestDocumentRetrieval)
#include "test_document_retrieval.moc"
