// Split GGUF models (llama.cpp's gguf-split parts): a real model written as parts opens as one
// (every tensor's bytes, the metadata and the engine's logits equal the unsplit file's), a changed
// byte is caught (the negative control), and each broken split ends in one clear error that names
// the part.
#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>

using namespace hearth;
using namespace hearth::gguf;

namespace {

std::string storiesPath() {
    return test::testDataPath(QStringLiteral("models/stories260K.gguf"));
}

// A writer holding `f`'s metadata (split keys too when keepSplitKeys) and tensors (bytes copied),
// the tensors in reverse order when `reversed`.
Writer copyOf(const File& f, bool keepSplitKeys = false, bool reversed = false) {
    Writer w(f.version());
    for (const KeyValue& kv : f.metadata())
        if (keepSplitKeys || !isSplitKey(kv.key)) w.set(kv.key, kv.value);
    std::vector<const TensorInfo*> order;
    for (const TensorInfo& t : f.tensors()) order.push_back(&t);
    if (reversed) std::reverse(order.begin(), order.end());
    for (const TensorInfo* t : order) {
        const uint8_t* d = f.tensorData(*t);
        const Status s = w.addTensor(t->name, t->type,
                                     std::vector<uint64_t>(t->ne.begin(), t->ne.begin() + t->nDims),
                                     std::vector<uint8_t>(d, d + t->bytes));
        if (!s.isOk()) qFatal("%s", s.toString().c_str());
    }
    return w;
}

// Empty when the two files hold the same metadata (split keys aside, in order) and the same tensors
// (name, type, shape, and bytes both through tensorData and through the data reader); otherwise
// what differs first.
std::string difference(const File& a, const File& b) {
    std::vector<const KeyValue*> ka, kb;
    for (const KeyValue& kv : a.metadata())
        if (!isSplitKey(kv.key)) ka.push_back(&kv);
    for (const KeyValue& kv : b.metadata())
        if (!isSplitKey(kv.key)) kb.push_back(&kv);
    if (ka.size() != kb.size()) return "metadata counts differ";
    for (size_t i = 0; i < ka.size(); ++i)
        if (ka[i]->key != kb[i]->key || ka[i]->value.type() != kb[i]->value.type() ||
            ka[i]->value.toDisplayString(1u << 20) != kb[i]->value.toDisplayString(1u << 20))
            return "metadata '" + ka[i]->key + "' differs";
    if (a.tensors().size() != b.tensors().size()) return "tensor counts differ";
    for (const TensorInfo& t : a.tensors()) {
        const TensorInfo* u = b.findTensor(t.name);
        if (!u) return "tensor '" + t.name + "' is missing";
        if (u->type != t.type || u->ne != t.ne || u->nDims != t.nDims || u->bytes != t.bytes)
            return "tensor '" + t.name + "' has another type or shape";
        const uint8_t *da = a.tensorData(t), *db = b.tensorData(*u);
        if (!da || !db || std::memcmp(da, db, t.bytes) != 0)
            return "tensor '" + t.name + "' bytes differ";
        std::vector<uint8_t> viaReader(t.bytes);
        if (!b.dataReader()->read(db, viaReader.size(), viaReader.data()).isOk() ||
            std::memcmp(viaReader.data(), da, t.bytes) != 0)
            return "tensor '" + t.name + "' bytes read through the data reader differ";
    }
    return {};
}

class LogitSink : public TokenSink {
public:
    void onToken(const TokenInfo& t) override {
        std::lock_guard<std::mutex> lock(m_mu);
        if (t.id >= 0) logits.insert(logits.end(), t.logits.begin(), t.logits.end());
    }
    void onFinish(FinishReason, const Usage&) override { finish(Status::ok()); }
    void onError(const Status& s) override { finish(s); }
    bool wait() {
        std::unique_lock<std::mutex> lock(m_mu);
        return m_cv.wait_for(lock, std::chrono::seconds(120), [&] { return m_done; });
    }
    std::vector<float> logits;
    Status error;

private:
    void finish(const Status& s) {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        m_done = true;
        m_cv.notify_all();
    }
    std::mutex m_mu;
    std::condition_variable m_cv;
    bool m_done = false;
};

// Every step's logits of 6 greedy tokens after a short prompt, on the CPU.
Result<std::vector<float>> greedyLogits(const std::string& path, bool useMmap = true) {
    EngineConfig c;
    c.modelPath = path;
    c.contextLength = 64;
    c.kvMemoryBytes = 1ull << 20;
    c.threads = 2;
    c.useMmap = useMmap;
    HEARTH_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(c));
    auto sink = std::make_shared<LogitSink>();
    GenerationRequest r;
    r.prompt = {1, 403, 407, 261, 378};
    r.sampling.temperature = 0.0f;
    r.maxTokens = 6;
    r.ignoreEos = true;
    r.returnLogits = true;
    r.sink = sink;
    HEARTH_RETURN_IF_ERROR(engine->submit(std::move(r)).status());
    if (!sink->wait()) return internalError("the request did not finish");
    HEARTH_RETURN_IF_ERROR(sink->error);
    return sink->logits;
}

// Opens a part alone and rewrites it after `edit` changed its writer.
void rewritePart(const std::string& path, const std::function<void(Writer&)>& edit) {
    ReadOptions alone;
    alone.openSplitParts = false;
    auto f = File::open(path, alone);
    if (!f) qFatal("%s", f.status().toString().c_str());
    Writer w = copyOf(*f, true);
    edit(w);
    const Status s = w.writeFile(path);
    if (!s.isOk()) qFatal("%s", s.toString().c_str());
}

} // namespace

class TestGgufSplit : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::optional<File> m_stories;
    int m_fresh = 0;

    // stories260K as 3 parts of 16 tensors in a folder of its own; returns the prefix.
    std::string freshSplit(bool reversed = false) {
        const QString folder = m_dir.filePath(QString::number(++m_fresh));
        QDir().mkpath(folder);
        const std::string prefix = QDir(folder).filePath(QStringLiteral("stories")).toStdString();
        Writer::SplitOptions o;
        o.maxTensors = 16;
        auto paths = copyOf(*m_stories, false, reversed).writeSplit(prefix, o);
        if (!paths || paths->size() != 3) qFatal("writeSplit failed");
        return prefix;
    }
    static std::string part(const std::string& prefix, uint32_t index) {
        return splitPartPath(prefix, index, 3);
    }

    // Opening the split at `prefix` fails with `code` and a message holding each of `phrases`.
    static void expectError(const std::string& path, ErrorCode code,
                            std::initializer_list<const char*> phrases) {
        auto f = File::open(path);
        QVERIFY2(!f.isOk(), "a broken split opened");
        const std::string m = f.status().toString();
        qInfo("%s", m.c_str());
        QCOMPARE(f.status().code(), code);
        for (const char* p : phrases) QVERIFY2(m.find(p) != std::string::npos, p);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QVERIFY(m_dir.isValid());
        auto f = File::open(storiesPath());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->tensors().size(), size_t(48));
        m_stories.emplace(std::move(*f));
    }

    void partNamesFollowLlamaCpp() {
        auto n = parseSplitName("dir/model-q4-00002-of-00003.gguf");
        QVERIFY(n.has_value());
        QCOMPARE(n->prefix, std::string("dir/model-q4"));
        QCOMPARE(n->index, 1u);
        QCOMPARE(n->count, 3u);
        QCOMPARE(splitPartPath("dir/model-q4", 1, 3),
                 std::string("dir/model-q4-00002-of-00003.gguf"));
        QCOMPARE(splitPartPath("m", 0, 12), std::string("m-00001-of-00012.gguf"));
        for (const char* bad :
             {"m-00000-of-00003.gguf", "m-00004-of-00003.gguf", "m-0002-of-00003.gguf",
              "m-00002-of-00003.bin", "m-0000a-of-00003.gguf", "-00001-of-00003.gguf", "m.gguf"})
            QVERIFY2(!parseSplitName(bad), bad);
        QVERIFY(isSplitKey("split.count") && isSplitKey("split.no") &&
                isSplitKey("split.tensors.count"));
        QVERIFY(!isSplitKey("split.other"));
    }

    void roundTripThreeParts() {
        const std::string prefix = freshSplit();
        for (bool mmap : {true, false}) {
            ReadOptions o;
            o.useMmap = mmap;
            auto f = File::open(part(prefix, 0), o);
            QVERIFY2(f.isOk(), f.status().toString().c_str());
            QCOMPARE(f->parts().size(), size_t(3));
            uint64_t onDisk = 0;
            for (uint32_t i = 0; i < 3; ++i) {
                QCOMPARE(f->parts()[i].path, part(prefix, i));
                QCOMPARE(f->parts()[i].tensorCount, uint64_t(16));
                onDisk += uint64_t(QFileInfo(QString::fromStdString(part(prefix, i))).size());
            }
            QCOMPARE(f->fileSize(), onDisk);
            QCOMPARE(f->tensors().back().part, 2u);
            QCOMPARE(*f->getU32("split.count"), 3u);
            const std::string diff = difference(*m_stories, *f);
            QVERIFY2(diff.empty(), diff.c_str());
            auto a = readModelInfo(*m_stories), b = readModelInfo(*f);
            QVERIFY(a.isOk() && b.isOk());
            QCOMPARE(b->weightBytes, a->weightBytes);
            QCOMPARE(b->parameterCount, a->parameterCount);
        }
        // The later parts carry only the split keys; the first part alone is a 16-tensor file.
        ReadOptions alone;
        alone.openSplitParts = false;
        auto second = File::open(part(prefix, 1), alone);
        QVERIFY(second.isOk());
        QCOMPARE(second->metadata().size(), size_t(3));
        // In the order llama.cpp's gguf-split writes them (its parts and ours were compared byte
        // for byte: identical for --split-max-tensors 20 and --split-max-size 1M on stories260K).
        QCOMPARE(second->metadata()[0].key, std::string("split.no"));
        QCOMPARE(second->metadata()[1].key, std::string("split.tensors.count"));
        QCOMPARE(second->metadata()[2].key, std::string("split.count"));
        QCOMPARE(*second->getU32("split.no"), 1u);
        QCOMPARE(second->find("split.no")->type(), ValueType::U16);
        QCOMPARE(second->find("split.tensors.count")->type(), ValueType::I32);
        auto first = File::open(part(prefix, 0), alone);
        QVERIFY(first.isOk());
        QCOMPARE(first->tensors().size(), size_t(16));
    }

    void splitByBytes() {
        const QString folder = m_dir.filePath(QStringLiteral("bytes"));
        QDir().mkpath(folder);
        const std::string prefix = QDir(folder).filePath(QStringLiteral("s")).toStdString();
        Writer::SplitOptions o;
        o.maxBytes = 100 * 1024; // token_embd (512 x 64 F32, 128 KiB) is larger: a part of its own
        auto paths = copyOf(*m_stories).writeSplit(prefix, o);
        QVERIFY2(paths.isOk(), paths.status().toString().c_str());
        QVERIFY(paths->size() > 3);
        auto f = File::open(paths->front());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->parts().size(), paths->size());
        for (const PartInfo& p : f->parts()) {
            uint64_t data = 0;
            for (const TensorInfo& t : f->tensors())
                if (f->parts()[t.part].path == p.path) data += (t.bytes + 31) / 32 * 32;
            QVERIFY(data <= o.maxBytes || p.tensorCount == 1);
        }
        const std::string diff = difference(*m_stories, *f);
        QVERIFY2(diff.empty(), diff.c_str());

        QCOMPARE(copyOf(*m_stories).writeSplit(prefix, {}).status().code(),
                 ErrorCode::InvalidArgument);
        // In memory: the same bytes as on disk.
        auto inMemory = copyOf(*m_stories).writeSplitToMemory(o);
        QVERIFY(inMemory.isOk());
        QCOMPARE(inMemory->size(), paths->size());
        QFile last(QString::fromStdString(paths->back()));
        QVERIFY(last.open(QIODevice::ReadOnly));
        const QByteArray onDisk = last.readAll();
        QVERIFY(onDisk.size() == qsizetype(inMemory->back().size()) &&
                std::memcmp(onDisk.constData(), inMemory->back().data(), size_t(onDisk.size())) ==
                    0);
    }

    // A model aligned to 64: the first part keeps its alignment, the later ones have the default
    // (as gguf-split writes them), and every tensor's data still lies aligned in its part.
    void alignmentOfTheFirstPart() {
        Writer w = copyOf(*m_stories);
        w.set("general.alignment", Value::u32(64));
        auto whole = w.writeToMemory();
        QVERIFY(whole.isOk());
        auto wholeFile = File::fromMemory(whole->data(), whole->size());
        QVERIFY(wholeFile.isOk());
        const QString folder = m_dir.filePath(QStringLiteral("aligned"));
        QDir().mkpath(folder);
        Writer::SplitOptions o;
        o.maxTensors = 16;
        auto paths = w.writeSplit(QDir(folder).filePath(QStringLiteral("a")).toStdString(), o);
        QVERIFY(paths.isOk() && paths->size() == 3);
        auto f = File::open(paths->front());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->alignment(), 64u);
        for (const TensorInfo& t : f->tensors())
            QCOMPARE(t.offset % (t.part == 0 ? 64 : 32), uint64_t(0));
        const std::string diff = difference(*wholeFile, *f);
        QVERIFY2(diff.empty(), diff.c_str());
        ReadOptions alone;
        alone.openSplitParts = false;
        auto second = File::open((*paths)[1], alone);
        QVERIFY(second.isOk());
        QCOMPARE(second->alignment(), 32u);
    }

    void engineGivesIdenticalLogits() {
        auto whole = greedyLogits(storiesPath());
        QVERIFY2(whole.isOk(), whole.status().toString().c_str());
        QCOMPARE(whole->size(), size_t(6 * 512));
        // Tensors in file order, and reversed so that the token embedding (read through the data
        // reader, row by row) lies in the last part.
        for (bool reversed : {false, true}) {
            const std::string prefix = freshSplit(reversed);
            auto f = File::open(part(prefix, 0));
            QVERIFY(f.isOk());
            QCOMPARE(f->findTensor("token_embd.weight")->part, reversed ? 2u : 0u);
            for (bool mmap : {true, false}) {
                auto split = greedyLogits(part(prefix, 0), mmap);
                QVERIFY2(split.isOk(), split.status().toString().c_str());
                QVERIFY(*split == *whole);
            }
        }
    }

    // The checks above can fail: one changed byte in the last part is seen by the comparison and
    // changes the logits.
    void negativeControl() {
        const std::string prefix = freshSplit();
        std::string changed;
        {
            ReadOptions alone;
            alone.openSplitParts = false;
            auto last = File::open(part(prefix, 2), alone);
            QVERIFY(last.isOk());
            const TensorInfo& t = last->tensors().front();
            changed = t.name;
            QFile file(QString::fromStdString(part(prefix, 2)));
            QVERIFY(file.open(QIODevice::ReadWrite));
            // The sign of the tensor's third value (F32).
            QCOMPARE(int(t.type), int(quant::Type::F32));
            QVERIFY(file.seek(qint64(last->dataOffset() + t.offset + 11)));
            const char flipped = char(file.read(1)[0] ^ 0x80);
            QVERIFY(file.seek(qint64(last->dataOffset() + t.offset + 11)));
            QCOMPARE(file.write(&flipped, 1), qint64(1));
        }
        auto f = File::open(part(prefix, 0));
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        const std::string diff = difference(*m_stories, *f);
        QCOMPARE(diff, "tensor '" + changed + "' bytes differ");
        auto whole = greedyLogits(storiesPath());
        auto split = greedyLogits(part(prefix, 0));
        QVERIFY(whole.isOk() && split.isOk());
        QVERIFY(*split != *whole);
    }

    void missingPart() {
        const std::string prefix = freshSplit();
        QVERIFY(QFile::remove(QString::fromStdString(part(prefix, 1))));
        expectError(part(prefix, 0), ErrorCode::NotFound,
                    {"part 2 of 3", "stories-00002-of-00003.gguf", "missing"});
    }

    void laterPartOpenedDirectly() {
        const std::string prefix = freshSplit();
        expectError(part(prefix, 2), ErrorCode::InvalidArgument,
                    {"is part 3 of 3", "open its first part", "stories-00001-of-00003.gguf"});
    }

    void partCountDisagrees() {
        const std::string prefix = freshSplit();
        rewritePart(part(prefix, 2), [](Writer& w) { w.set("split.count", Value::u16(4)); });
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"part 3 of 3", "stories-00003-of-00003.gguf",
                     "split.count is 4, the first part says 3"});
    }

    void partNumberDisagrees() {
        const std::string prefix = freshSplit();
        rewritePart(part(prefix, 2), [](Writer& w) { w.set("split.no", Value::u16(1)); });
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"stories-00003-of-00003.gguf", "split.no is 1, expected 2"});
        // Parts swapped on disk.
        const std::string swapped = freshSplit();
        const QString p2 = QString::fromStdString(part(swapped, 1)),
                      p3 = QString::fromStdString(part(swapped, 2));
        QVERIFY(QFile::rename(p2, p2 + QStringLiteral(".x")) && QFile::rename(p3, p2) &&
                QFile::rename(p2 + QStringLiteral(".x"), p3));
        expectError(part(swapped, 0), ErrorCode::InvalidFormat,
                    {"stories-00002-of-00003.gguf", "split.no is 2, expected 1"});
    }

    void partWithoutSplitKeys() {
        const std::string prefix = freshSplit();
        rewritePart(part(prefix, 1), [](Writer& w) { QVERIFY(w.remove("split.count").isOk()); });
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"stories-00002-of-00003.gguf", "has no split.count key"});
    }

    void duplicateTensorAcrossParts() {
        const std::string prefix = freshSplit();
        const TensorInfo& inFirst = m_stories->tensors().front();
        rewritePart(part(prefix, 2), [&](Writer& w) {
            const uint8_t* d = m_stories->tensorData(inFirst);
            QVERIFY(w.addTensor(inFirst.name, inFirst.type,
                                std::vector<uint64_t>(inFirst.ne.begin(),
                                                      inFirst.ne.begin() + inFirst.nDims),
                                std::vector<uint8_t>(d, d + inFirst.bytes))
                        .isOk());
        });
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"stories-00003-of-00003.gguf",
                     ("tensor '" + inFirst.name + "' is also in part 1").c_str()});
    }

    void tensorCountDisagrees() {
        const std::string prefix = freshSplit();
        // Part 3 rewritten with one tensor fewer.
        ReadOptions alone;
        alone.openSplitParts = false;
        auto last = File::open(part(prefix, 2), alone);
        QVERIFY(last.isOk());
        Writer w;
        for (const KeyValue& kv : last->metadata()) w.set(kv.key, kv.value);
        for (size_t i = 1; i < last->tensors().size(); ++i) {
            const TensorInfo& t = last->tensors()[i];
            const uint8_t* d = last->tensorData(t);
            QVERIFY(w.addTensor(t.name, t.type,
                                std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.nDims),
                                std::vector<uint8_t>(d, d + t.bytes))
                        .isOk());
        }
        QVERIFY(w.writeFile(part(prefix, 2)).isOk());
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"stories-00001-of-00003.gguf",
                     "split.tensors.count is 48 but the 3 parts hold 47 tensors"});
    }

    void truncatedPart() {
        const std::string prefix = freshSplit();
        const QString p2 = QString::fromStdString(part(prefix, 1));
        QVERIFY(QFile::resize(p2, QFileInfo(p2).size() - 100));
        expectError(
            part(prefix, 0), ErrorCode::InvalidFormat,
            {"part 2 of 3 (", "stories-00002-of-00003.gguf", "runs past the end of the file"});
        // A part cut inside its header.
        QVERIFY(QFile::resize(p2, 40));
        expectError(part(prefix, 0), ErrorCode::InvalidFormat,
                    {"stories-00002-of-00003.gguf", "is impossible for a 40-byte file"});
    }

    void firstPartNamedOtherwise() {
        const std::string prefix = freshSplit();
        const QString renamed = QFileInfo(QString::fromStdString(prefix)).absolutePath() +
                                QStringLiteral("/renamed.gguf");
        QVERIFY(QFile::rename(QString::fromStdString(part(prefix, 0)), renamed));
        expectError(renamed.toStdString(), ErrorCode::InvalidFormat,
                    {"renamed.gguf is the first of 3 parts", "NAME-00001-of-00003.gguf",
                     "cannot be found"});
        // A complete file named as a first part, without split keys, is not taken for one.
        const QString named = QFileInfo(QString::fromStdString(prefix)).absolutePath() +
                              QStringLiteral("/whole-00001-of-00002.gguf");
        QVERIFY(QFile::copy(QString::fromStdString(storiesPath()), named));
        expectError(named.toStdString(), ErrorCode::InvalidFormat,
                    {"whole-00001-of-00002.gguf is named as part 1 of 2", "no split.count key"});
        // A one-part split (gguf-split with a large limit) is a plain file.
        Writer::SplitOptions o;
        o.maxTensors = 100;
        auto one = copyOf(*m_stories).writeSplit(prefix + "-one", o);
        QVERIFY(one.isOk() && one->size() == 1);
        QCOMPARE(one->front(), prefix + "-one-00001-of-00001.gguf");
        auto f = File::open(one->front());
        QVERIFY(f.isOk());
        QVERIFY(difference(*m_stories, *f).empty());
    }
};

QTEST_GUILESS_MAIN(TestGgufSplit)
#include "test_gguf_split.moc"
