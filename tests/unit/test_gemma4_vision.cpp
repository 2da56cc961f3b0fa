// Gemma 4's image input without the reference: the patch grid mtmd chooses within its token
// budget (numbers worked from mtmd's dynamic-size rule; test_vision_reference checks the same
// counts against mtmd itself), the preprocessing's padding and 2v - 1 values, and a synthesized
// "gemma4v" projector's keys, tensors and metadata as readProjector reads them.
#include "hearth/gguf.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/vision.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

// Gemma 4's preprocessing facts as readProjector gives them: 16-pixel patches pooled 3 x 3, a
// budget of 70..1120 tokens.
ProjectorInfo gemma4BudgetInfo() {
    ProjectorInfo p;
    p.type = "gemma4v";
    p.imageSize = 224;
    p.patchSize = 16;
    p.merge = 3;
    p.minTokens = 70;
    p.maxTokens = 1120;
    return p;
}

Image gemma4SolidImage(int width, int height, std::array<uint8_t, 3> rgb) {
    Image im;
    im.width = width;
    im.height = height;
    im.rgb.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < im.rgb.size(); i += 3)
        for (size_t c = 0; c < 3; ++c) im.rgb[i + c] = rgb[c];
    return im;
}

} // namespace

class TestGemma4Vision : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string tinyProjector() {
        const std::string path = m_dir.filePath(QStringLiteral("gemma4v.gguf")).toStdString();
        ProjectorSynthOptions o;
        o.family = "gemma4v";
        o.patchSize = 16;
        o.merge = 3;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.positionSize = 256;
        o.projectionDim = 96;
        o.outPath = path;
        const Status s = synthesizeProjector(o);
        return s.isOk() ? path : std::string();
    }

private Q_SLOTS:
    void patchGridFollowsTheTokenBudget() {
        const ProjectorInfo p = gemma4BudgetInfo();
        // Within the budget: each side rounded to whole 48-pixel squares.
        QCOMPARE(patchGrid(p, 640, 480), (PatchGrid{39, 30})); // 624 x 480: 13 x 10 squares
        QCOMPARE(patchGrid(p, 2000, 1000), (PatchGrid{126, 63})); // 2016 x 1008: 882 tokens
        // Below it: scaled up by sqrt(161280 / area), each side ceiled.
        QCOMPARE(patchGrid(p, 100, 60), (PatchGrid{33, 21})); // 528 x 336: 77 tokens
        QCOMPARE(patchGrid(p, 10, 10), (PatchGrid{27, 27}));  // 432 x 432: 81 tokens
        // Above it: scaled down by sqrt(area / 2580480), each side floored (62.5 rounds up first).
        QCOMPARE(patchGrid(p, 4000, 3000), (PatchGrid{114, 84})); // 1824 x 1344: 1064 tokens
        QCOMPARE(patchGrid(p, 2000, 1400), (PatchGrid{120, 84})); // 1120 tokens, as mtmd gives
        QCOMPARE(patchGrid(p, 0, 10), PatchGrid{});
        // Gemma 3: always its square.
        ProjectorInfo g3;
        g3.type = "gemma3";
        g3.imageSize = 896;
        g3.patchSize = 14;
        g3.merge = 4;
        QCOMPARE(patchGrid(g3, 100, 60), (PatchGrid{64, 64}));
    }

    void synthesizedProjectorHasGemma4sLayout() {
        const std::string path = tinyProjector();
        QVERIFY(!path.empty());
        auto info = readProjector(path);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("gemma4v"));
        QCOMPARE(info->family, std::string("SigLIP (Gemma 4)"));
        QCOMPARE(info->merge, 3);
        QCOMPARE(info->patchSize, 16);
        QCOMPARE(info->projectionDim, 96);
        QCOMPARE(info->minTokens, 70);
        QCOMPARE(info->maxTokens, 1120);
        QCOMPARE(info->tokensPerImage, int64_t(1120));
        QCOMPARE(info->imageBegin, std::string("<|image>"));
        QCOMPARE(info->imageEnd, std::string("<image|>"));
        auto f = gguf::File::open(path);
        QVERIFY(f.isOk());
        QVERIFY(!f->has("clip.projector_type")); // the converter writes clip.vision.projector_type only
        QVERIFY(!f->has("clip.use_gelu"));
        auto shape = [&](const char* name) {
            const gguf::TensorInfo* t = f->findTensor(name);
            std::vector<uint64_t> ne;
            if (t)
                for (uint32_t d = 0; d < t->nDims; ++d) ne.push_back(t->ne[d]);
            return ne;
        };
        QCOMPARE(shape("v.patch_embd.weight"), (std::vector<uint64_t>{16, 16, 3, 64}));
        QCOMPARE(shape("v.position_embd.weight"), (std::vector<uint64_t>{64, 256, 2}));
        QCOMPARE(shape("v.blk.1.attn_q_norm.weight"), (std::vector<uint64_t>{16}));
        QCOMPARE(shape("v.blk.1.ffn_gate.weight"), (std::vector<uint64_t>{64, 128}));
        QCOMPARE(shape("v.blk.1.ffn_down.weight"), (std::vector<uint64_t>{128, 64}));
        QCOMPARE(shape("v.blk.1.out_scale.weight"), (std::vector<uint64_t>{1}));
        QCOMPARE(shape("v.std_bias"), (std::vector<uint64_t>{64}));
        QCOMPARE(shape("mm.input_projection.weight"), (std::vector<uint64_t>{64, 96}));
        QVERIFY(shape("v.post_ln.weight").empty());
        QVERIFY(shape("v.patch_embd.bias").empty());
    }

    void patchesArePaddedAndMappedToPlusMinusOne() {
        const std::string path = tinyProjector();
        QVERIFY(!path.empty());
        auto enc = VisionEncoder::open(path, VisionOptions{"cpu", 1});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        // 100 x 60 becomes 528 x 336: scaled by 5.28 to 528 x 317, 9 black rows above.
        auto px = (*enc)->patches(gemma4SolidImage(100, 60, {255, 0, 255}));
        QVERIFY2(px.isOk(), px.status().toString().c_str());
        const size_t row = 3 * 16 * 16;
        QCOMPARE(px->size(), size_t(33 * 21) * row);
        // Patch 0: rows 0..8 are padding (-1 in every channel), rows 9.. the picture.
        QCOMPARE((*px)[0], -1.0f);
        QCOMPARE((*px)[8 * 16], -1.0f);
        QCOMPARE((*px)[9 * 16], 1.0f);               // red 255
        QCOMPARE((*px)[16 * 16 + 9 * 16], -1.0f);    // green 0
        // The middle patch is all picture: 2 · 1 - 1 and 2 · 0 - 1.
        const size_t mid = size_t(10 * 33 + 16) * row;
        QCOMPARE((*px)[mid], 1.0f);
        QCOMPARE((*px)[mid + 256], -1.0f);
        QCOMPARE((*px)[mid + 512 + 255], 1.0f);
    }
};

QTEST_APPLESS_MAIN(TestGemma4Vision)
#include "test_gemma4_vision.moc"
