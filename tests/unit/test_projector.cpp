// Multimodal projector files (hearth/projector.h): a Gemma 3 projector's metadata as llama.cpp's
// converter writes it, read back; the check against a text model's width, a text-only model and
// a llama (which takes LLaVA's projectors, not Gemma 3's); files that are not
// vision projectors, or miss or garble a key, refused naming it; `hearth-cli inspect` on one.
#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "gemma3_vision_files.h"
#include "test_support.h"

#include <nlohmann/json.hpp>

#include <QFile>
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
    std::string m_gemma3, m_gemma3Projector;
    int m_gemma3Width = 0;

    // A synthesized Gemma 3 (a model that takes images) and its width, written once.
    QString gemma3() {
        if (!m_gemma3.empty()) return {};
        QString error = test::synthGemma3WithProjector(m_dir.path(), m_gemma3, m_gemma3Projector);
        if (!error.isEmpty()) return error;
        auto p = readProjector(m_gemma3Projector);
        if (!p) return QString::fromStdString(p.status().toString());
        m_gemma3Width = p->projectionDim;
        return {};
    }

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
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QVERIFY2(gemma3().isEmpty(), qPrintable(gemma3()));
        const int width = m_gemma3Width;
        auto fits = readProjector(writeProjector(m_dir, "fits.gguf", width));
        auto other = readProjector(writeProjector(m_dir, "wider.gguf", width + 32));
        QVERIFY(fits.isOk() && other.isOk());
        QVERIFY2(checkProjectorFor(*fits, m_gemma3).isOk(), checkProjectorFor(*fits, m_gemma3).toString().c_str());
        const Status s = checkProjectorFor(*other, m_gemma3);
        QCOMPARE(s.code(), ErrorCode::InvalidArgument);
        QVERIFY2(s.message().find(std::to_string(width + 32)) != std::string::npos &&
                     s.message().find(std::to_string(width)) != std::string::npos,
                 s.toString().c_str());
        // A text-only architecture of the projector's width is refused, naming it.
        std::string textOnly;
        const QString synth = test::synthTextOnlyModel(m_dir.path(), textOnly); // qwen3-tiny, as wide
        QVERIFY2(synth.isEmpty(), qPrintable(synth));
        const Status text = checkProjectorFor(*fits, textOnly);
        QVERIFY2(!text.isOk() && text.message().find("qwen3") != std::string::npos &&
                     text.message().find("does not take images") != std::string::npos,
                 text.toString().c_str());
        // llama takes LLaVA's (mlp) projectors only: a Gemma 3 projector of its width is another
        // model's.
        const std::string stories = test::testDataPath(QStringLiteral("models/stories260K.gguf")); // 64 wide
        const Status other64 = checkProjectorFor(*readProjector(writeProjector(m_dir, "w64.gguf", 64)), stories);
        QVERIFY2(!other64.isOk() && other64.message().find("llama") != std::string::npos &&
                     other64.message().find("belongs to another model") != std::string::npos,
                 other64.toString().c_str());
        QVERIFY(!checkProjectorFor(*fits, "/nonexistent/model.gguf").isOk());
    }

    void projectorBesideTheModelIsFound() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QVERIFY2(gemma3().isEmpty(), qPrintable(gemma3()));
        const int width = m_gemma3Width;
        QTemporaryDir folder;
        const QString model = folder.filePath(QStringLiteral("gemma.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(m_gemma3), model));
        // Nothing beside it yet.
        auto none = findProjectorFor(model.toStdString());
        QVERIFY2(none.isOk(), none.status().toString().c_str());
        QCOMPARE(*none, std::string());
        // A projector of another width, a file named like one that is not, and a fitting one not
        // named "mmproj": none serves it.
        QVERIFY(!writeProjector(folder, "mmproj-other-f16.gguf", width + 32).empty());
        QFile junk(folder.filePath(QStringLiteral("mmproj-broken-F16.gguf")));
        QVERIFY(junk.open(QIODevice::WriteOnly) && junk.write("GGUF not really") > 0);
        junk.close();
        QVERIFY(!writeProjector(folder, "vision-f16.gguf", width).empty());
        QCOMPARE(*findProjectorFor(model.toStdString()), std::string());
        // Fitting ones: F32 before a quantized one, F16 before both.
        const std::string f32 = writeProjector(folder, "mmproj-gemma-F32.gguf", width);
        QVERIFY(!writeProjector(folder, "mmproj-gemma-Q8_0.gguf", width).empty());
        QCOMPARE(*findProjectorFor(model.toStdString()), f32);
        const std::string f16 = writeProjector(folder, "MMPROJ-gemma-f16.gguf", width);
        QCOMPARE(*findProjectorFor(model.toStdString()), f16);
        QVERIFY(isProjectorFileName("mmproj-model-f16.gguf") && !isProjectorFileName("gemma-3-4b.gguf"));
        // A text-only model of that width in the same folder has none.
        std::string textOnly;
        const QString synth = test::synthTextOnlyModel(folder.path(), textOnly);
        QVERIFY2(synth.isEmpty(), qPrintable(synth));
        QCOMPARE(*findProjectorFor(textOnly), std::string());
        // Nor has a llama of a Gemma 3 projector's width: that projector is another model's.
        const QString stories = folder.filePath(QStringLiteral("stories.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                            stories));
        QVERIFY(!writeProjector(folder, "mmproj-stories-f16.gguf", 64).empty());
        QCOMPARE(*findProjectorFor(stories.toStdString()), std::string());
        // A folder that does not exist is an error, not "none".
        QVERIFY(!findProjectorFor("/nonexistent/folder/model.gguf").isOk());
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
        o.family = "ldp"; // MobileVLM's: not synthesized
        QVERIFY(!synthesizeProjector(o).isOk());
    }

    // A random-weight projector of Qwen3-VL's layout (Qwen3.5's tower, with deepstack mergers
    // after layers 0 and 1): the tensors and keys llama.cpp's converter writes, read back with
    // mtmd's facts (2 x 2 merging, 8..4096 tokens, the vision start and end text).
    void synthesizedProjectorHasQwen3VlsLayout() {
        ProjectorSynthOptions o;
        o.family = "qwen3vl_merger";
        o.patchSize = 16;
        o.merge = 2;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.positionSize = 64;
        o.projectionDim = 96;
        o.deepstack = {0, 1};
        o.outPath = m_dir.filePath(QStringLiteral("qwen3vl-mmproj.gguf")).toStdString();
        QVERIFY2(synthesizeProjector(o).isOk(), synthesizeProjector(o).toString().c_str());
        auto p = readProjector(o.outPath);
        QVERIFY2(p.isOk(), p.status().toString().c_str());
        QCOMPARE(p->family, std::string("Qwen3-VL ViT"));
        QCOMPARE(p->merge, 2);
        QCOMPARE(p->minTokens, 8);
        QCOMPARE(p->maxTokens, 4096);
        QCOMPARE(p->imageBegin, std::string("<|vision_start|>"));
        QCOMPARE(p->imageEnd, std::string("<|vision_end|>"));
        QCOMPARE(p->imageSize, 128); // 8 positions per side of 16 pixels
        auto file = gguf::File::open(o.outPath);
        QVERIFY(file.isOk());
        const std::vector<std::pair<std::string, std::array<uint64_t, 4>>> shapes = {
            {"v.patch_embd.weight", {16, 16, 3, 64}},
            {"v.patch_embd.weight.1", {16, 16, 3, 64}},
            {"v.patch_embd.bias", {64, 1, 1, 1}},
            {"v.position_embd.weight", {64, 64, 1, 1}},
            {"v.blk.1.attn_qkv.weight", {64, 192, 1, 1}},
            {"v.blk.1.attn_qkv.bias", {192, 1, 1, 1}},
            {"v.blk.1.ffn_up.weight", {64, 128, 1, 1}},
            {"v.blk.1.ffn_down.weight", {128, 64, 1, 1}},
            {"v.deepstack.1.norm.weight", {256, 1, 1, 1}},
            {"v.deepstack.1.fc2.weight", {256, 96, 1, 1}},
            {"v.post_ln.weight", {64, 1, 1, 1}},
            {"mm.0.weight", {256, 256, 1, 1}},
            {"mm.2.weight", {256, 96, 1, 1}}};
        for (const auto& [name, ne] : shapes) {
            const gguf::TensorInfo* t = file->findTensor(name);
            QVERIFY2(t, name.c_str());
            QVERIFY2(t->ne == ne, name.c_str());
        }
        // The tower: 4 + 12 per layer + 6 per deepstack merger + the merger's 6.
        QCOMPARE(file->tensors().size(), size_t(4 + 2 * 12 + 2 * 6 + 6));
        o.merge = 3;
        QVERIFY(!synthesizeProjector(o).isOk());
        o.merge = 2;
        o.positionSize = 60; // not a square
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

    void inspectCountsTheProjectorBesideAModel() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QVERIFY2(gemma3().isEmpty(), qPrintable(gemma3()));
        QTemporaryDir folder;
        const QString model = folder.filePath(QStringLiteral("gemma.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(m_gemma3), model));
        auto inspect = [&](const QStringList& extra) {
            QProcess p;
            p.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    QStringList{QStringLiteral("inspect"), model, QStringLiteral("--json")} + extra);
            if (!p.waitForFinished(60000) || p.exitCode() != 0) return nlohmann::json();
            return nlohmann::json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
        };
        const nlohmann::json alone = inspect({});
        QVERIFY(alone.is_object());
        QCOMPARE(alone["memory"]["projector_bytes"].get<uint64_t>(), uint64_t(0));
        QVERIFY(!alone.contains("projector"));
        QVERIFY(QFile::copy(QString::fromStdString(m_gemma3Projector), folder.filePath(QStringLiteral("mmproj-gemma-f16.gguf"))));
        const nlohmann::json paired = inspect({});
        QVERIFY(paired.is_object());
        const uint64_t bytes = paired["memory"]["projector_bytes"].get<uint64_t>();
        const auto info = readProjector(m_gemma3Projector);
        QVERIFY(bytes > info->tensorBytes); // the weights and an image's working set
        QCOMPARE(paired["memory"]["total_bytes"].get<uint64_t>(), alone["memory"]["total_bytes"].get<uint64_t>() + bytes);
        QVERIFY(paired["projector"]["file"].get<std::string>().find("mmproj-gemma-f16.gguf") != std::string::npos);
        QCOMPARE(inspect({QStringLiteral("--no-mmproj")})["memory"]["projector_bytes"].get<uint64_t>(), uint64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestProjector)
#include "test_projector.moc"
