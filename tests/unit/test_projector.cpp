// Multimodal projector files (hearth/projector.h): a Gemma 3 projector's metadata as llama.cpp's
// converter writes it, read back; the check against a text model's width; files that are not
// vision projectors, or miss or garble a key, refused naming it; `hearth-cli inspect` on one.
#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <array>
#include <functional>

using namespace hearth;

namespace {

// A projector of Gemma 3's layout (a small SigLIP: 896-pixel images, 14-pixel patches), its
// embeddings `width` wide; `edit` changes the keys before writing.
std::string writeProjector(const QTemporaryDir& dir, const char* name, int width,
                           const std::function<void(gguf::Writer&)>& edit = {}) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string("clip"));
    w.set("clip.has_vision_encoder", gguf::Value::boolean(true));
    w.set("clip.projector_type", gguf::Value::string("gemma3"));
    w.set("clip.vision.image_size", gguf::Value::u32(896));
    w.set("clip.vision.patch_size", gguf::Value::u32(14));
    w.set("clip.vision.embedding_length", gguf::Value::u32(32));
    w.set("clip.vision.feed_forward_length", gguf::Value::u32(64));
    w.set("clip.vision.block_count", gguf::Value::u32(2));
    w.set("clip.vision.attention.head_count", gguf::Value::u32(4));
    w.set("clip.vision.attention.layer_norm_epsilon", gguf::Value::f32(1e-6f));
    w.set("clip.vision.projection_dim", gguf::Value::u32(uint32_t(width)));
    w.set("clip.vision.image_mean", gguf::Value::f32Array({0.5f, 0.5f, 0.5f}));
    w.set("clip.vision.image_std", gguf::Value::f32Array({0.5f, 0.5f, 0.5f}));
    std::vector<uint8_t> proj(size_t(32 * width) * 4, 0);
    if (!w.addTensor("mm.input_projection.weight", quant::Type::F32, {uint64_t(width), 32},
                     std::move(proj))
             .isOk())
        return {};
    if (edit) edit(w);
    const std::string path = dir.filePath(QString::fromLatin1(name)).toStdString();
    return w.writeFile(path).isOk() ? path : std::string();
}

} // namespace

class TestProjector : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private Q_SLOTS:
    void gemma3ProjectorIsRead() {
        const std::string path = writeProjector(m_dir, "gemma3.gguf", 64);
        QVERIFY(!path.empty());
        auto p = readProjector(path);
        QVERIFY2(p.isOk(), p.status().toString().c_str());
        QCOMPARE(p->type, std::string("gemma3"));
        QCOMPARE(p->family, std::string("SigLIP (Gemma 3)"));
        QCOMPARE(p->imageSize, 896);
        QCOMPARE(p->patchSize, 14);
        QCOMPARE(p->nLayer, 2);
        QCOMPARE(p->projectionDim, 64);
        QCOMPARE(p->merge, 4);
        QCOMPARE(p->tokensPerImage,
                 int64_t(256)); // (896 / 14 / 4)^2, as Gemma 3's 256 image tokens
        QCOMPARE(p->mean[1], 0.5f);
        QCOMPARE(p->tensorBytes, uint64_t(32 * 64 * 4));
        // The converter's scale factor (a test model's), when written, replaces the default merge.
        const std::string scaled = writeProjector(m_dir, "scaled.gguf", 64, [](gguf::Writer& w) {
            w.set("clip.vision.projector.scale_factor", gguf::Value::u32(2));
        });
        QCOMPARE(readProjector(scaled)->tokensPerImage, int64_t(1024));
    }

    void checkedAgainstTheTextModel() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string stories =
            test::testDataPath(QStringLiteral("models/stories260K.gguf")); // 64 wide
        auto fits = readProjector(writeProjector(m_dir, "w64.gguf", 64));
        auto other = readProjector(writeProjector(m_dir, "w96.gguf", 96));
        QVERIFY(fits.isOk() && other.isOk());
        QVERIFY(checkProjectorFor(*fits, stories).isOk());
        const Status s = checkProjectorFor(*other, stories);
        QCOMPARE(s.code(), ErrorCode::InvalidArgument);
        QVERIFY2(s.message().find("96") != std::string::npos &&
                     s.message().find("64") != std::string::npos,
                 s.toString().c_str());
        QVERIFY(!checkProjectorFor(*fits, "/nonexistent/model.gguf").isOk());
    }

    void badProjectorsAreRefusedNamingTheKey() {
        struct Case {
            const char* name;
            std::function<void(gguf::Writer&)> edit;
            const char* expect;
        };
        const std::vector<Case> cases = {
            {"audio.gguf",
             [](gguf::Writer& w) { w.set("clip.has_vision_encoder", gguf::Value::boolean(false)); },
             "no vision encoder"},
            {"notype.gguf", [](gguf::Writer& w) { (void)w.remove("clip.projector_type"); },
             "projector_type"},
            {"nosize.gguf", [](gguf::Writer& w) { (void)w.remove("clip.vision.image_size"); },
             "clip.vision.image_size"},
            {"zero.gguf",
             [](gguf::Writer& w) { w.set("clip.vision.block_count", gguf::Value::u32(0)); },
             "clip.vision.block_count"},
            {"huge.gguf",
             [](gguf::Writer& w) { w.set("clip.vision.patch_size", gguf::Value::u32(1000)); },
             "patch size"},
            {"heads.gguf",
             [](gguf::Writer& w) {
                 w.set("clip.vision.attention.head_count", gguf::Value::u32(5));
             },
             "heads"},
            {"std.gguf",
             [](gguf::Writer& w) {
                 w.set("clip.vision.image_std", gguf::Value::f32Array({0.5f, 0.0f, 0.5f}));
             },
             "image_std"},
            {"mean.gguf",
             [](gguf::Writer& w) {
                 w.set("clip.vision.image_mean", gguf::Value::f32Array({0.5f}));
             },
             "image_mean"},
            {"eps.gguf",
             [](gguf::Writer& w) {
                 w.set("clip.vision.attention.layer_norm_epsilon", gguf::Value::string("x"));
             },
             "layer_norm_epsilon"},
        };
        for (const Case& c : cases) {
            const std::string path = writeProjector(m_dir, c.name, 64, c.edit);
            QVERIFY(!path.empty());
            auto p = readProjector(path);
            QVERIFY2(!p.isOk(), c.name);
            QVERIFY2(p.status().message().find(c.expect) != std::string::npos,
                     p.status().toString().c_str());
        }
        // A type Hearth has no name for is read, named by its type.
        auto odd = readProjector(writeProjector(m_dir, "odd.gguf", 64, [](gguf::Writer& w) {
            w.set("clip.projector_type", gguf::Value::string("cogvlm"));
        }));
        QVERIFY(odd.isOk());
        QCOMPARE(odd->family, std::string("cogvlm"));
        QVERIFY(!readProjector("/nonexistent/mmproj.gguf").isOk());
    }

    // A random-weight projector of Gemma 3's layout: the tensors llama.cpp's converter writes, in
    // its shapes (llama-server --mmproj loads such a file and encodes images with it), read back.
    void synthesizedProjectorHasGemma3sLayout() {
        ProjectorSynthOptions o;
        o.imageSize = 224;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.projectionDim = 96;
        o.outPath = m_dir.filePath(QStringLiteral("synth-mmproj.gguf")).toStdString();
        QVERIFY2(synthesizeProjector(o).isOk(), synthesizeProjector(o).toString().c_str());
        auto p = readProjector(o.outPath);
        QVERIFY2(p.isOk(), p.status().toString().c_str());
        QCOMPARE(p->family, std::string("SigLIP (Gemma 3)"));
        QCOMPARE(p->tokensPerImage, int64_t(16)); // (224 / 14 / 4)^2
        QCOMPARE(p->projectionDim, 96);
        auto file = gguf::File::open(o.outPath);
        QVERIFY(file.isOk());
        const std::vector<std::pair<std::string, std::array<uint64_t, 4>>> shapes = {
            {"v.patch_embd.weight", {14, 14, 3, 64}},
            {"v.position_embd.weight", {64, 256, 1, 1}},
            {"v.blk.1.attn_q.weight", {64, 64, 1, 1}},
            {"v.blk.1.ffn_up.weight", {64, 128, 1, 1}},
            {"v.blk.1.ffn_down.weight", {128, 64, 1, 1}},
            {"v.post_ln.bias", {64, 1, 1, 1}},
            {"mm.soft_emb_norm.weight", {64, 1, 1, 1}},
            {"mm.input_projection.weight", {96, 64, 1, 1}}};
        for (const auto& [name, ne] : shapes) {
            const gguf::TensorInfo* t = file->findTensor(name);
            QVERIFY2(t, name.c_str());
            QVERIFY2(t->ne == ne, name.c_str());
        }
        QCOMPARE(file->tensors().size(), size_t(3 + 2 * 16 + 4));
        o.projectionDim = 0;
        QVERIFY(!synthesizeProjector(o).isOk());
        o.projectionDim = 96;
        o.family = "pixtral";
        QVERIFY(!synthesizeProjector(o).isOk());
    }

    void inspectDescribesAProjector() {
        const std::string path = writeProjector(m_dir, "inspect.gguf", 64);
        QProcess p;
        p.start(test::binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("inspect"), QString::fromStdString(path)});
        QVERIFY(p.waitForFinished(60000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(out.contains(QStringLiteral("SigLIP (Gemma 3)")) &&
                     out.contains(QStringLiteral("256 embeddings")),
                 qPrintable(out));
    }
};

QTEST_GUILESS_MAIN(TestProjector)
#include "test_projector.moc"
