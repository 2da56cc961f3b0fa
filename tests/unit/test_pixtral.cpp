// Mistral 3's Pixtral image input without the reference: a synthesized "pixtral" projector's keys
// and tensors as readProjector reads them, the patch grid within mtmd's budget of 8..1024 merged
// patches (numbers test_pixtral_reference checks against mtmd itself), and the encoder's
// [IMG_BREAK] rows: the file's row, after each row of embeddings but the last, with the 2 x 2
// merger (Ministral 3, Mistral Small 3.1) and without it (Pixtral 12B).
#include "hearth/gguf.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/vision.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cstring>

using namespace hearth;

namespace {

Image patternImage(int width, int height) {
    Image im;
    im.width = width;
    im.height = height;
    im.rgb.resize(size_t(width) * size_t(height) * 3);
    for (size_t i = 0; i < im.rgb.size(); ++i) im.rgb[i] = uint8_t((i * 37 + i / 97) % 256);
    return im;
}

} // namespace

class TestPixtral : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::string tinyProjector(int merge) {
        const std::string path =
            m_dir.filePath(QStringLiteral("pixtral-m%1.gguf").arg(merge)).toStdString();
        ProjectorSynthOptions o;
        o.family = "pixtral";
        o.imageSize = 448;
        o.patchSize = 14;
        o.merge = merge;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.projectionDim = 96;
        o.outPath = path;
        const Status s = synthesizeProjector(o);
        return s.isOk() ? path : std::string();
    }

    // The encoder's embeddings of a width x height picture: mtmd's count, and the break rows
    // (the file's v.token_embd.img_break, exactly) only after each row of merged patches.
    void checkBreakRows(const std::string& projector, int width, int height) {
        auto enc = VisionEncoder::open(projector, VisionOptions{"cpu", 2});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        const ProjectorInfo& info = (*enc)->info();
        const PatchGrid grid = patchGrid(info, width, height);
        const int64_t columns = grid.columns / info.merge, rows = grid.rows / info.merge;
        auto e = (*enc)->encode(patternImage(width, height));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        QCOMPARE(e->tokens, columns * rows + rows - 1);
        QCOMPARE(e->width, 96);
        auto file = gguf::File::open(projector);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        const gguf::TensorInfo* t = file->findTensor("v.token_embd.img_break");
        QVERIFY(t && t->type == quant::Type::F32);
        const float* rowBreak = reinterpret_cast<const float*>(file->tensorData(*t));
        int64_t breaks = 0;
        for (int64_t i = 0; i < e->tokens; ++i) {
            const bool isBreak =
                std::memcmp(e->values.data() + i * e->width, rowBreak, size_t(e->width) * sizeof(float)) == 0;
            const bool wantBreak = (i + 1) % (columns + 1) == 0;
            QVERIFY2(isBreak == wantBreak, qPrintable(QStringLiteral("row %1").arg(i)));
            breaks += isBreak;
        }
        QCOMPARE(breaks, rows - 1);
    }

private Q_SLOTS:
    void synthesizedProjectorHasPixtralsLayout() {
        const std::string path = tinyProjector(2);
        QVERIFY(!path.empty());
        auto info = readProjector(path);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("pixtral"));
        QCOMPARE(info->family, std::string("Pixtral (Mistral 3)"));
        QCOMPARE(info->merge, 2);
        QCOMPARE(info->imageBegin, std::string());
        QCOMPARE(info->imageEnd, std::string("[IMG_END]"));
        QCOMPARE(info->minTokens, 8);
        QCOMPARE(info->maxTokens, 1024);
        QCOMPARE(info->projectionDim, 96);
        auto file = gguf::File::open(path);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        const gguf::TensorInfo* merger = file->findTensor("mm.patch_merger.weight");
        QVERIFY(merger && merger->nDims == 2 && merger->ne[0] == 64 * 4 && merger->ne[1] == 64);
        for (const char* name : {"v.pre_ln.weight", "mm.input_norm.weight", "mm.1.weight", "mm.1.bias", "mm.2.weight",
                                 "mm.2.bias", "v.token_embd.img_break", "v.blk.1.ffn_gate.weight"})
            QVERIFY2(file->findTensor(name), name);
        QVERIFY(!file->findTensor("v.position_embd.weight")); // positions by 2-D RoPE only
        // Without a merger (Pixtral 12B) the file has neither the merger nor its norm.
        auto plain = gguf::File::open(tinyProjector(1));
        QVERIFY2(plain.isOk(), plain.status().toString().c_str());
        QVERIFY(!plain->findTensor("mm.patch_merger.weight") && !plain->findTensor("mm.input_norm.weight"));
    }

    // mtmd's choice for 14-pixel patches merged 2 x 2: rounded to 28 pixels within the budget,
    // scaled down past 1024 merged patches, up below 8.
    void patchGridFollowsTheBudget() {
        auto info = readProjector(tinyProjector(2));
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(patchGrid(*info, 100, 60), (PatchGrid{8, 4}));
        QCOMPARE(patchGrid(*info, 37, 250), (PatchGrid{2, 18}));
        QCOMPARE(patchGrid(*info, 20, 20), (PatchGrid{6, 6}));
        QCOMPARE(patchGrid(*info, 1200, 900), (PatchGrid{72, 54}));
    }

    void breakRowsFollowEachRowButTheLast() {
        const std::string merged = tinyProjector(2), plain = tinyProjector(1);
        QVERIFY(!merged.empty() && !plain.empty());
        checkBreakRows(merged, 100, 60);
        if (QTest::currentTestFailed()) return;
        checkBreakRows(merged, 37, 250);
        if (QTest::currentTestFailed()) return;
        checkBreakRows(plain, 100, 60);
    }
};

QTEST_APPLESS_MAIN(TestPixtral)
#include "test_pixtral.moc"
