// GGUF reader and writer tests: real files round-trip byte for byte, typed accessors explain
// their errors, and every class of malformed file is refused with a clear message, never a crash.
#include "gguf_builder.h"
#include "hearth/gguf.h"
#include "hearth/quant.h"
#include "pagemap.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>

using namespace hearth;
using namespace hearth::gguf;
using hearth::test::GgufBytes;

namespace {

// A small valid file: two kv pairs and two F32 tensors of 4 and 8 elements.
GgufBytes validFile() {
    GgufBytes b;
    b.header(2, 2).kvStr("general.architecture", "llama").kvU32("general.alignment", 32);
    b.tensor("a", {4}, 0, 0).tensor("b", {4, 2}, 0, 32);
    b.padTo(32).zeros(16).padTo(32).zeros(32);
    return b;
}

Status parse(const std::vector<uint8_t>& bytes) {
    return File::fromMemory(bytes.data(), bytes.size()).status();
}

std::vector<uint8_t> readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

#define EXPECT_REJECTED(bytes, expectedCode, text)                                                         \
    do {                                                                                           \
        Status s_ = parse(bytes);                                                                  \
        QVERIFY2(!s_.isOk(), "accepted a malformed file");                                         \
        QVERIFY2(s_.code() == (expectedCode), s_.toString().c_str());                                      \
        QVERIFY2(QString::fromStdString(s_.message()).contains(QStringLiteral(text)),              \
                 s_.toString().c_str());                                                           \
    } while (0)

} // namespace

class TestGguf : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parsesValidFile() {
        auto bytes = validFile().bytes;
        auto f = File::fromMemory(bytes.data(), bytes.size());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->version(), 3u);
        QCOMPARE(int(f->tensors().size()), 2);
        QCOMPARE(f->tensors()[1].shapeString(), std::string("[4, 2]"));
        QCOMPARE(f->tensors()[1].bytes, uint64_t(32));
        QCOMPARE(f->tensorData(*f->findTensor("b")), bytes.data() + f->dataOffset() + 32);
        QCOMPARE(*f->getString("general.architecture"), std::string("llama"));
    }

    void realFilesRoundTripByteForByte_data() {
        QTest::addColumn<QString>("name");
        for (const char* n : {"stories260K.gguf", "llama-2-tiny-random.gguf",
                              "ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf",
                              "ggml-vocab-qwen2.gguf"})
            QTest::newRow(n) << QString::fromLatin1(n);
    }
    void realFilesRoundTripByteForByte() {
        QFETCH(QString, name);
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/") + name);
        const std::string path = hearth::test::testDataPath(QStringLiteral("models/") + name);
        auto f = File::open(path);
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        Writer w(f->version());
        for (const KeyValue& kv : f->metadata()) w.set(kv.key, kv.value);
        for (const TensorInfo& t : f->tensors()) {
            const uint8_t* d = f->tensorData(t);
            QVERIFY(d);
            QVERIFY(w.addTensor(t.name, t.type, {t.ne.begin(), t.ne.begin() + t.nDims},
                                std::vector<uint8_t>(d, d + t.bytes))
                        .isOk());
        }
        auto out = w.writeToMemory();
        QVERIFY(out.isOk());
        QVERIFY(*out == readAll(path));
    }

    void readingWithoutMmapGivesTheSameTensors() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        ReadOptions noMap;
        noMap.useMmap = false;
        auto mapped = File::open(path);
        auto read = File::open(path, noMap);
        QVERIFY2(mapped.isOk() && read.isOk(), read.status().toString().c_str());
        QCOMPARE(read->tensors().size(), mapped->tensors().size());
        QCOMPARE(*read->getU32("llama.block_count"), 5u);
        for (const TensorInfo& t : mapped->tensors()) {
            const TensorInfo* u = read->findTensor(t.name);
            QVERIFY(u && u->bytes == t.bytes);
            const uint8_t* a = mapped->tensorData(t);
            const uint8_t* b = read->tensorData(*u);
            QVERIFY(b != a);
            QCOMPARE(reinterpret_cast<uintptr_t>(b) % 32, reinterpret_cast<uintptr_t>(a) % 32);
            QVERIFY(std::memcmp(a, b, t.bytes) == 0);
        }
        QCOMPARE(File::open(path + ".missing", noMap).status().code(), ErrorCode::IoError);
    }

    void dataReaderCopiesWithoutMapping() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string path = hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"));
        ReadOptions noMap;
        noMap.useMmap = false;
        const std::vector<uint8_t> bytes = readAll(path);
        auto mapped = File::open(path);
        auto read = File::open(path, noMap);
        auto memory = File::fromMemory(bytes.data(), bytes.size());
        QVERIFY(mapped.isOk() && read.isOk() && memory.isOk());
        for (const File* f : {&*mapped, &*read, &*memory}) {
            const auto reader = f->dataReader();
            QVERIFY(reader);
            const TensorInfo* t = f->findTensor("token_embd.weight");
            QVERIFY(t);
            const uint8_t* d = f->tensorData(*t);
            std::vector<uint8_t> out(size_t(t->bytes) - 100);
            QVERIFY(reader->read(d + 100, out.size(), out.data()).isOk());
            QVERIFY(std::memcmp(out.data(), bytes.data() + f->dataOffset() + t->offset + 100, out.size()) == 0);
            // Outside the file's bytes: refused, nothing read.
            uint8_t one = 0;
            QCOMPARE(reader->read(d - f->dataOffset() - t->offset - 1, 1, &one).code(), ErrorCode::OutOfRange);
            QCOMPARE(reader->read(d, size_t(f->fileSize()), &one).code(), ErrorCode::OutOfRange);
            QCOMPARE(reader->read(nullptr, 1, &one).code(), ErrorCode::OutOfRange);
        }
        // Reading a mapped file's tensor through the reader leaves the mapping untouched: with the
        // table's pages dropped from this process (opening the file may have mapped them: fault-
        // around, huge pages), reads bring none of its whole pages back (/proc/self/pagemap, bit 63).
        const TensorInfo* t = mapped->findTensor("token_embd.weight");
        const uint8_t* d = mapped->tensorData(*t);
        const int pm = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        if (pm < 0) QSKIP("/proc/self/pagemap is not readable here");
        const uintptr_t page = 4096, first = (reinterpret_cast<uintptr_t>(d) + page - 1) / page,
                        last = (reinterpret_cast<uintptr_t>(d) + t->bytes) / page;
        QVERIFY(last > first + 8);
        QCOMPARE(madvise(reinterpret_cast<void*>(first * page), (last - first) * page, MADV_DONTNEED), 0);
        std::vector<uint8_t> all(size_t(t->bytes));
        for (int i = 0; i < 3; ++i) QVERIFY(mapped->dataReader()->read(d, all.size(), all.data()).isOk());
        QVERIFY(std::memcmp(all.data(), bytes.data() + mapped->dataOffset() + t->offset, all.size()) == 0);
        auto present = [&] { return hearth::test::presentPages(pm, first, last); };
        QCOMPARE(present(), 0);
        volatile uint8_t touch = *reinterpret_cast<const uint8_t*>(first * page + 8);
        (void)touch;
        QVERIFY(present() > 0); // the check sees a page that the mapping did fault in
        ::close(pm);
    }

    void sharedModelFacts() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto f = File::open(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(f.isOk());
        QCOMPARE(int(f->tensors().size()), 48);
        QCOMPARE(*f->getString("general.architecture"), std::string("llama"));
        QCOMPARE(*f->getU32("llama.block_count"), 5u);
        QCOMPARE(*f->getU32("llama.embedding_length"), 64u);
        QCOMPARE(int(f->getStringArray("tokenizer.ggml.tokens")->size()), 512);
        QCOMPARE(int(f->getF32Array("tokenizer.ggml.scores")->size()), 512);
        QCOMPARE(int(f->getI32Array("tokenizer.ggml.token_type")->size()), 512);
    }

    void accessorsExplainErrors() {
        auto bytes = validFile().bytes;
        auto f = File::fromMemory(bytes.data(), bytes.size());
        auto missing = f->getU32("llama.block_count");
        QCOMPARE(missing.status().code(), ErrorCode::NotFound);
        QCOMPARE(missing.status().message(), std::string("missing key 'llama.block_count'"));
        auto wrong = f->getU32("general.architecture");
        QCOMPARE(wrong.status().code(), ErrorCode::InvalidFormat);
        QVERIFY(QString::fromStdString(wrong.status().message()).contains("is string"));
        QCOMPARE(*f->getU64("general.alignment"), uint64_t(32));
        QVERIFY(!f->getF32("general.alignment").isOk());
        QVERIFY(!f->getStringArray("general.architecture").isOk());
    }

    void valueConversions() {
        QCOMPARE(*Value::i32(5).asUInt(), uint64_t(5));
        QVERIFY(!Value::i32(-5).asUInt());
        QCOMPARE(*Value::i32(-5).asInt(), int64_t(-5));
        QVERIFY(!Value::u64(~0ull).asInt());
        QVERIFY(!Value::string("x").asFloat());
        QCOMPARE(*Value::f32(0.5f).asFloat(), 0.5);
        QCOMPARE(Value::i32Array({1, -2, 3}).arraySize(), uint64_t(3));
        QCOMPARE(*Value::i32Array({1, -2, 3}).asI32Array(), (std::vector<int32_t>{1, -2, 3}));
        QVERIFY(!Value::i32Array({1, -2}).asUIntArray());
        QCOMPARE(Value::stringArray({"a", "b"}).toDisplayString(), std::string("[\"a\", \"b\"]"));
        QCOMPARE(Value::u32Array(std::vector<uint32_t>(100, 1)).toDisplayString(),
                 std::string("[100 u32 values]"));
    }

    // "One value or one per layer" keys, as llama.cpp's get_key_or_arr reads them: a scalar of any
    // integer type stands for every layer; an array of any integer width and signedness (and, for
    // flags, of bools) gives each layer its own.
    void perLayerKeysInEveryType() {
        Writer w;
        w.set("scalar.u8", Value::u8(7));
        w.set("scalar.i64", Value::i64(7));
        w.set("scalar.bool", Value::boolean(true));
        w.set("array.i16", Value::numericArray(ValueType::I16, {3, 0, 0, 1, 2, 0}));
        w.set("array.u64", Value::numericArray(ValueType::U64, std::vector<uint8_t>(24, 0)));
        w.set("array.bool", Value::numericArray(ValueType::Bool, {1, 0, 1}));
        w.set("array.i32", Value::i32Array({0, 5, 1}));
        auto bytes = w.writeToMemory();
        QVERIFY(bytes.isOk());
        auto f = File::fromMemory(bytes->data(), bytes->size());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(*f->getCounts("scalar.u8", 3, 100), (std::vector<uint64_t>{7, 7, 7}));
        QCOMPARE(*f->getCounts("scalar.i64", 2, 100), (std::vector<uint64_t>{7, 7}));
        QCOMPARE(*f->getCounts("array.i16", 3, 1000), (std::vector<uint64_t>{3, 256, 2}));
        QCOMPARE(*f->getCounts("array.u64", 3, 1), (std::vector<uint64_t>{0, 0, 0}));
        QCOMPARE(*f->getFlags("scalar.bool", 2), (std::vector<bool>{true, true}));
        QCOMPARE(*f->getFlags("scalar.u8", 2), (std::vector<bool>{true, true}));
        QCOMPARE(*f->getFlags("array.bool", 3), (std::vector<bool>{true, false, true}));
        QCOMPARE(*f->getFlags("array.i32", 3), (std::vector<bool>{false, true, true}));
    }

    // Bad per-layer keys name the key, what it holds and what was expected.
    void perLayerKeysExplainErrors() {
        Writer w;
        w.set("short", Value::u32Array({1, 2, 3}));
        w.set("strings", Value::stringArray({"a", "b", "c", "d"}));
        w.set("negative", Value::i32Array({4, -1, 4, 4}));
        w.set("negative.scalar", Value::i8(-2));
        w.set("flags", Value::numericArray(ValueType::Bool, {1, 0, 1, 0}));
        w.set("flag", Value::boolean(true));
        w.set("real", Value::f32(1.5f));
        w.set("huge", Value::u64(1ull << 40));
        auto bytes = w.writeToMemory();
        QVERIFY(bytes.isOk());
        auto f = File::fromMemory(bytes->data(), bytes->size());
        QVERIFY(f.isOk());
        auto expectError = [&](const Status& s, ErrorCode code, const std::string& text) {
            QVERIFY2(s.code() == code, s.toString().c_str());
            QVERIFY2(s.message().find(text) != std::string::npos, s.toString().c_str());
        };
        expectError(f->getCounts("short", 4, 100).status(), ErrorCode::InvalidFormat,
                    "short is u32[3], expected one integer or an integer array of 4");
        expectError(f->getFlags("short", 4).status(), ErrorCode::InvalidFormat,
                    "short is u32[3], expected one bool or integer, or a bool or integer array of 4");
        expectError(f->getCounts("strings", 4, 100).status(), ErrorCode::InvalidFormat, "strings is string[4]");
        expectError(f->getFlags("strings", 4).status(), ErrorCode::InvalidFormat, "strings is string[4]");
        expectError(f->getCounts("negative", 4, 100).status(), ErrorCode::InvalidFormat,
                    "negative[1] is -1, expected a count of 0..100");
        expectError(f->getCounts("negative.scalar", 4, 100).status(), ErrorCode::InvalidFormat,
                    "negative.scalar is -2, expected a count");
        expectError(f->getFlags("negative", 4).status(), ErrorCode::InvalidFormat, "negative[1] is -1, expected a flag");
        // A bool is a flag, never a count.
        expectError(f->getCounts("flags", 4, 100).status(), ErrorCode::InvalidFormat,
                    "flags is bool[4], expected one integer or an integer array of 4");
        expectError(f->getCounts("flag", 4, 100).status(), ErrorCode::InvalidFormat, "flag is bool, expected one integer");
        expectError(f->getCounts("real", 2, 100).status(), ErrorCode::InvalidFormat, "real is f32");
        expectError(f->getCounts("huge", 2, 1u << 30).status(), ErrorCode::OutOfRange,
                    "huge is 1099511627776, over the largest count allowed (1073741824)");
        expectError(f->getCounts("absent", 2, 100).status(), ErrorCode::NotFound, "missing key 'absent'");
        QCOMPARE(Value::numericArray(ValueType::Bool, {1, 0}).typeDescription(), std::string("bool[2]"));
        QCOMPARE(Value::u16(3).typeDescription(), std::string("u16"));
    }

    void rejectsHeaderProblems() {
        const std::vector<uint8_t> tiny(2, uint8_t(71));
        EXPECT_REJECTED(tiny, ErrorCode::InvalidFormat, "too small");
        auto b = validFile().bytes;
        b[0] = uint8_t(88);
        EXPECT_REJECTED(b, ErrorCode::InvalidFormat, "bad magic");
        for (uint32_t v : {0u, 1u, 4u}) {
            auto c = validFile().bytes;
            std::memcpy(c.data() + 4, &v, 4);
            EXPECT_REJECTED(c, ErrorCode::Unsupported, "version");
        }
        EXPECT_REJECTED(GgufBytes().header(0, uint64_t(1) << 40).bytes, ErrorCode::InvalidFormat,
                        "metadata count");
        EXPECT_REJECTED(GgufBytes().header(~0ull, 0).bytes, ErrorCode::InvalidFormat,
                        "tensor count");
    }

    void rejectsMetadataProblems() {
        // String longer than the file.
        GgufBytes s;
        s.header(0, 1).str("general.name").put<uint32_t>(8).put<uint64_t>(1000).zeros(20);
        EXPECT_REJECTED(s.bytes, ErrorCode::InvalidFormat, "past the end");
        // Huge string length (over the cap).
        GgufBytes h;
        h.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(~0ull).zeros(20);
        EXPECT_REJECTED(h.bytes, ErrorCode::InvalidFormat, "over the limit");
        // Array count huge.
        GgufBytes a;
        a.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 60);
        EXPECT_REJECTED(a.bytes, ErrorCode::InvalidFormat, "limit");
        GgufBytes a2;
        a2.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1000).zeros(40);
        EXPECT_REJECTED(a2.bytes, ErrorCode::InvalidFormat, "past the end");
        GgufBytes a3;
        a3.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(1000000).zeros(40);
        EXPECT_REJECTED(a3.bytes, ErrorCode::InvalidFormat, "cannot fit");
        // Nested array.
        GgufBytes n;
        n.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(1).zeros(20);
        EXPECT_REJECTED(n.bytes, ErrorCode::InvalidFormat, "nested");
        // Unknown value type, bool 2, empty and duplicate keys.
        GgufBytes u;
        u.header(0, 1).str("k").put<uint32_t>(13).zeros(20);
        EXPECT_REJECTED(u.bytes, ErrorCode::InvalidFormat, "unknown value type");
        GgufBytes bo;
        bo.header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).zeros(20);
        EXPECT_REJECTED(bo.bytes, ErrorCode::InvalidFormat, "bool");
        GgufBytes e;
        e.header(0, 1).kvU32("", 1).zeros(20);
        EXPECT_REJECTED(e.bytes, ErrorCode::InvalidFormat, "empty");
        GgufBytes d;
        d.header(0, 2).kvU32("k", 1).kvU32("k", 2).zeros(20);
        EXPECT_REJECTED(d.bytes, ErrorCode::InvalidFormat, "duplicate metadata key 'k'");
    }

    void rejectsBadAlignment() {
        for (uint32_t a : {0u, 3u, 0x80000000u}) {
            GgufBytes b;
            b.header(0, 1).kvU32("general.alignment", a).zeros(20);
            EXPECT_REJECTED(b.bytes, ErrorCode::InvalidFormat, "power of two");
        }
        GgufBytes s;
        s.header(0, 1).kvStr("general.alignment", "32").zeros(20);
        EXPECT_REJECTED(s.bytes, ErrorCode::InvalidFormat, "must be a u32");
    }

    void rejectsTensorProblems() {
        auto one = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                      uint64_t off, size_t dataBytes = 64) {
            GgufBytes b;
            b.header(1, 0).tensor(name, std::move(ne), type, off).padTo(32).zeros(dataBytes);
            return b.bytes;
        };
        GgufBytes dup;
        dup.header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).padTo(32).zeros(64);
        EXPECT_REJECTED(dup.bytes, ErrorCode::InvalidFormat, "duplicate tensor 't'");
        EXPECT_REJECTED(one(std::string(64, 'x'), {4}, 0, 0), ErrorCode::InvalidFormat, "name is 64");
        EXPECT_REJECTED(one("t", {}, 0, 0), ErrorCode::InvalidFormat, "0 dimensions");
        EXPECT_REJECTED(one("t", {1, 1, 1, 1, 1}, 0, 0), ErrorCode::InvalidFormat, "5 dimensions");
        EXPECT_REJECTED(one("t", {4, 0}, 0, 0), ErrorCode::InvalidFormat, "invalid dimension 0");
        EXPECT_REJECTED(one("t", {1ull << 32, 1ull << 32}, 0, 0), ErrorCode::InvalidFormat,
                        "overflows");
        EXPECT_REJECTED(one("t", {4}, 99, 0), ErrorCode::InvalidFormat, "unknown type id 99");
        EXPECT_REJECTED(one("t", {33}, 8, 0), ErrorCode::InvalidFormat, "not a multiple");
        EXPECT_REJECTED(one("t", {4}, 0, 4), ErrorCode::InvalidFormat, "not aligned");
        EXPECT_REJECTED(one("t", {4}, 0, 1ull << 40), ErrorCode::InvalidFormat, "past the end");
        EXPECT_REJECTED(one("t", {1024}, 0, 0), ErrorCode::InvalidFormat, "past the end");
        EXPECT_REJECTED(one("t", {64}, 0, ~0ull & ~31ull), ErrorCode::InvalidFormat, "overflows");
        GgufBytes overlap;
        overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).padTo(32).zeros(128);
        EXPECT_REJECTED(overlap.bytes, ErrorCode::InvalidFormat, "overlaps");
    }

    // The 1-3 bit i-quants and ternary types: a tensor of exactly its blocks parses (and its bytes
    // dequantize), one byte less is past the end, a width off the 256 block is refused.
    void lowBitTypesHaveTheirSizes_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("blockBytes");
        const std::pair<quant::Type, int> types[] = {
            {quant::Type::IQ2_XXS, 66}, {quant::Type::IQ2_XS, 74}, {quant::Type::IQ2_S, 82},
            {quant::Type::IQ3_XXS, 98}, {quant::Type::IQ3_S, 110}, {quant::Type::IQ1_S, 50},
            {quant::Type::IQ1_M, 56},   {quant::Type::TQ1_0, 54},  {quant::Type::TQ2_0, 66}};
        for (const auto& [t, bytes] : types)
            QTest::newRow(quant::typeName(t).data()) << int(t) << bytes;
    }
    void lowBitTypesHaveTheirSizes() {
        QFETCH(int, type);
        QFETCH(int, blockBytes);
        auto file = [&](std::vector<uint64_t> ne, size_t dataBytes) {
            GgufBytes b;
            b.header(1, 0).tensor("t", std::move(ne), uint32_t(type), 0).padTo(32).zeros(dataBytes);
            return b.bytes;
        };
        const auto good = file({256, 3}, size_t(3 * blockBytes));
        auto f = File::fromMemory(good.data(), good.size());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->tensors()[0].bytes, uint64_t(3 * blockBytes));
        std::vector<float> row(256);
        QVERIFY(quant::dequantizeRow(quant::Type(type), f->tensorData(f->tensors()[0]), row.data(), 256).isOk());
        EXPECT_REJECTED(file({256, 3}, size_t(3 * blockBytes - 1)), ErrorCode::InvalidFormat, "past the end");
        EXPECT_REJECTED(file({128, 3}, size_t(3 * blockBytes)), ErrorCode::InvalidFormat, "not a multiple");
    }

    void everyTruncationIsRefusedCleanly() {
        const auto full = validFile().bytes;
        for (size_t n = 0; n < full.size(); ++n) {
            std::vector<uint8_t> prefix(full.begin(), full.begin() + long(n));
            QVERIFY2(!parse(prefix).isOk(), qPrintable(QString("prefix %1 accepted").arg(n)));
        }
    }

    void randomCorruptionNeverCrashes() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const auto original =
            readAll(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        const size_t headerBytes = 14176; // metadata + tensor infos; corrupt where parsing happens
        std::mt19937_64 rng(1234);
        int refused = 0;
        for (int i = 0; i < 2000; ++i) {
            std::vector<uint8_t> b(original.begin(), original.end());
            const int flips = 1 + int(rng() % 8);
            for (int k = 0; k < flips; ++k) b[rng() % headerBytes] = uint8_t(rng());
            if (rng() % 4 == 0) b.resize(rng() % b.size());
            auto f = File::fromMemory(b.data(), b.size());
            if (!f.isOk()) {
                ++refused;
                QVERIFY(!f.status().message().empty());
                continue;
            }
            for (const TensorInfo& t : f->tensors()) QVERIFY(f->tensorData(t) != nullptr);
        }
        QVERIFY(refused > 100);
    }

    void writerAlignsAndReplacesKeys() {
        Writer w;
        w.set("general.architecture", Value::string("llama"));
        w.set("general.alignment", Value::u32(64));
        w.set("general.architecture", Value::string("qwen2")); // replaced in place
        QCOMPARE(w.alignment(), 64u);
        QVERIFY(w.addTensor("x", quant::Type::F32, {3}, std::vector<uint8_t>(12, 1)).isOk());
        QVERIFY(w.addTensor("y", quant::Type::F16, {2, 2}, std::vector<uint8_t>(8, 2)).isOk());
        QVERIFY(!w.addTensor("y", quant::Type::F32, {1}, std::vector<uint8_t>(4)).isOk());
        QVERIFY(!w.addTensor("z", quant::Type::F32, {2}, std::vector<uint8_t>(4)).isOk());
        QVERIFY(!w.addTensor("q", quant::Type::Q8_0, {16}, std::vector<uint8_t>(34)).isOk());
        auto bytes = w.writeToMemory();
        QVERIFY(bytes.isOk());
        auto f = File::fromMemory(bytes->data(), bytes->size());
        QVERIFY2(f.isOk(), f.status().toString().c_str());
        QCOMPARE(f->alignment(), 64u);
        QCOMPARE(f->dataOffset() % 64, uint64_t(0));
        QCOMPARE(f->metadata().front().key, std::string("general.architecture"));
        QCOMPARE(*f->getString("general.architecture"), std::string("qwen2"));
        QCOMPARE(f->findTensor("y")->offset, uint64_t(64));
        QCOMPARE(int(f->tensorData(*f->findTensor("y"))[0]), 2);
    }

    void writeFileIsAtomic() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("m.gguf")).toStdString();
        Writer ok;
        ok.set("general.architecture", Value::string("llama"));
        QVERIFY(ok.addTensor("t", quant::Type::F32, {4},
                             [](uint8_t* dst, uint64_t n) {
                                 std::memset(dst, 7, size_t(n));
                                 return Status::ok();
                             })
                    .isOk());
        QVERIFY(ok.writeFile(path).isOk());
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{QStringLiteral("m.gguf")});
        auto f = File::open(path);
        QVERIFY(f.isOk());
        QCOMPARE(int(f->tensorData(f->tensors()[0])[3]), 7);

        Writer bad;
        QVERIFY(bad.addTensor("t", quant::Type::F32, {4},
                              [](uint8_t*, uint64_t) { return ioError("generator failed"); })
                    .isOk());
        Status s = bad.writeFile(path);
        QVERIFY(!s.isOk());
        QVERIFY(QString::fromStdString(s.message()).contains("generator failed"));
        // The earlier file is untouched and no temporary file is left behind.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{QStringLiteral("m.gguf")});
        QVERIFY(File::open(path).isOk());
        QCOMPARE(File::open(dir.filePath(QStringLiteral("none")).toStdString()).status().code(),
                 ErrorCode::IoError);
    }
};

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
