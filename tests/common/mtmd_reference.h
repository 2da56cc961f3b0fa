// What the vision reference tests share to run llama.cpp's mtmd tools (ref_mtmd_embed and its
// kin, built by tests/tools/build_ref_mtmd.sh): the test pictures, raw pixels written for the
// tools, the floats they write read back, the embeddings of one image, and the devices a tower
// is checked on.
#pragma once

#include "hearth/devices.h"
#include "hearth/image.h"
#include "hearth/vision.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdint>
#include <fstream>
#include <vector>

namespace hearth::test {

// What a vision reference test runs on: mtmd's tools and a synthesized model with its projector.
struct MtmdFiles {
    QString embedTool;  // ref_mtmd_embed
    QString logitsTool; // ref_mtmd_logits, beside it
    QString model, projector;
};

// A vision reference test's working folder and the mtmd reference prepared there for one preset
// (HEARTH_PREPARE_MTMD in initTestCase): its files, paths in the folder, mtmd's embeddings.
struct MtmdFixture {
    QTemporaryDir dir;
    MtmdFiles files;

    QString path(const char* name) const { return dir.filePath(QString::fromLatin1(name)); }

    // mtmd's embeddings of the image [tokens][width] through `model` and `projector` (empty: the
    // prepared ones) and the shape it printed; empty on failure (the reason in `error`).
    std::vector<float> embeddings(const Image& image, QStringList& shape, QString& error, const QString& model = {},
                                  const QString& projector = {}) const;
};

// Builds mtmd's tools (tests/tools/build_ref_mtmd.sh, against the reference ReferenceLogits
// builds) and synthesizes `preset` in F32 with its projector (hearth-cli synth --mmproj) in dir.
// "" when ready; else why not, with skip set when the reference is not set up (the caller skips).
inline QString prepareMtmdReference(const QString& dir, const QString& preset, MtmdFiles& out, bool& skip) {
    ReferenceLogits ref;
    skip = false;
    if (QString err = ref.build(dir, skip); !err.isEmpty()) return err;
    QProcess build;
    build.start(QStringLiteral("bash"), {sourceDir() + QStringLiteral("/tests/tools/build_ref_mtmd.sh"), ref.refDir});
    if (!build.waitForFinished(900000) || build.exitCode() != 0)
        return QStringLiteral("build_ref_mtmd.sh failed: ") + QString::fromUtf8(build.readAllStandardError().right(2000));
    out.embedTool = QString::fromUtf8(build.readAllStandardOutput()).trimmed().split('\n').last();
    out.logitsTool = QFileInfo(out.embedTool).dir().filePath(QStringLiteral("ref_mtmd_logits"));
    out.model = QDir(dir).filePath(preset + QStringLiteral(".gguf"));
    out.projector = QDir(dir).filePath(preset + QStringLiteral("-mmproj.gguf"));
    QProcess synth;
    synth.start(binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"), QStringLiteral("F32"),
                 QStringLiteral("--vocab"),
                 QString::fromStdString(testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                 QStringLiteral("-o"), out.model, QStringLiteral("--mmproj"), out.projector});
    if (!synth.waitForFinished(300000) || synth.exitCode() != 0)
        return QStringLiteral("synth failed: ") + QString::fromUtf8(synth.readAllStandardError().right(2000));
    return {};
}

// A width x height picture of gradients and a pattern (raw pixels, as the decoder gives them):
// red xStep·x, green yStep·y, blue x·y + xTerm·x (each mod 256).
inline Image gradientPicture(int width, int height, int xStep = 2, int yStep = 4, int xTerm = 0) {
    Image im;
    im.width = width;
    im.height = height;
    im.rgb.resize(size_t(width) * size_t(height) * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &im.rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
            p[0] = uint8_t((xStep * x) % 256);
            p[1] = uint8_t((yStep * y) % 256);
            p[2] = uint8_t((x * y + xTerm * x) % 256);
        }
    return im;
}

// The image's pixels as the raw RGB file the tools read.
inline void writeRgb(const Image& image, const QString& file) {
    std::ofstream f(file.toStdString(), std::ios::binary);
    f.write(reinterpret_cast<const char*>(image.rgb.data()), std::streamsize(image.rgb.size()));
}

// A file of float32 values, whole.
inline std::vector<float> readFloats(const QString& file) {
    std::ifstream f(file.toStdString(), std::ios::binary | std::ios::ate);
    std::vector<float> v(size_t(int64_t(f.tellg()) / 4));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
    return v;
}

// ref_mtmd_embed's embeddings [tokens][width] of the image through model and projector (its files
// written in `folder`), and the shape it printed; empty on failure, the reason in `error`.
inline std::vector<float> mtmdEmbeddings(const QString& tool, const QString& model, const QString& projector,
                                         const Image& image, const QString& folder, QStringList& shape,
                                         QString& error) {
    const QString rgb = QDir(folder).filePath(QStringLiteral("picture.rgb"));
    const QString out = QDir(folder).filePath(QStringLiteral("picture.f32"));
    writeRgb(image, rgb);
    QProcess run;
    run.start(tool, {model, projector, rgb, QString::number(image.width), QString::number(image.height), out});
    if (!run.waitForFinished(300000) || run.exitCode() != 0) {
        error = QString::fromUtf8(run.readAllStandardError().right(3000));
        return {};
    }
    shape = QString::fromUtf8(run.readAllStandardOutput()).trimmed().split(' ');
    return readFloats(out);
}

inline std::vector<float> MtmdFixture::embeddings(const Image& image, QStringList& shape, QString& error,
                                                  const QString& model, const QString& projector) const {
    return mtmdEmbeddings(files.embedTool, model.isEmpty() ? files.model : model,
                          projector.isEmpty() ? files.projector : projector, image, dir.path(), shape, error);
}

// Hearth's preprocessing of the image (enc.patches) against ref_mtmd_preprocess's at `tool` (the
// fitted image [H][W][3], normalised; files written in `dir`), value for value; Gemma 4's values
// are then mapped to 2v - 1 (twiceLessOne). A difference fails the calling test function.
inline void checkPreprocessingEqualsMtmd(const QString& tool, const QString& projector, const VisionEncoder& enc,
                                         const Image& image, const QString& dir, bool twiceLessOne = false) {
    const int P = enc.info().patchSize;
    const QString rgb = QDir(dir).filePath(QStringLiteral("pre.rgb")), out = QDir(dir).filePath(QStringLiteral("pre.f32"));
    writeRgb(image, rgb);
    QProcess run;
    run.start(tool, {projector, rgb, QString::number(image.width), QString::number(image.height), out});
    QVERIFY(run.waitForFinished(300000));
    QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
    const QStringList size = QString::fromUtf8(run.readAllStandardOutput()).trimmed().split(' ');
    QCOMPARE(size.size(), 2);
    const int W = size[0].toInt(), H = size[1].toInt();
    const PatchGrid grid = patchGrid(enc.info(), image.width, image.height);
    QCOMPARE(W, grid.columns * P);
    QCOMPARE(H, grid.rows * P);
    const std::vector<float> want = readFloats(out); // [H][W][3]
    QCOMPARE(want.size(), size_t(W) * size_t(H) * 3);
    auto got = enc.patches(image); // [patch][channel][row][column]
    QVERIFY2(got.isOk(), got.status().toString().c_str());
    QCOMPARE(got->size(), want.size());
    size_t k = 0, differ = 0;
    for (int py = 0; py < grid.rows; ++py)
        for (int px = 0; px < grid.columns; ++px)
            for (int c = 0; c < 3; ++c)
                for (int y = 0; y < P; ++y)
                    for (int x = 0; x < P; ++x, ++k) {
                        const float v = want[(size_t(py * P + y) * size_t(W) + size_t(px * P + x)) * 3 + size_t(c)];
                        if ((*got)[k] != (twiceLessOne ? v * 2.0f - 1.0f : v)) ++differ;
                    }
    qInfo("%dx%d: %d x %d pixels, %zu of %zu values differ", image.width, image.height, W, H, differ, want.size());
    QCOMPARE(differ, size_t(0));
}

// ref_mtmd_logits' reading of a prompt with the image at its marker: its chunks' text ids (before
// and after the image), the image's token count and the last position's logits; error says why
// when the tool failed.
struct MtmdPromptLogits {
    std::vector<std::vector<int32_t>> texts;
    int64_t imageTokens = 0;
    std::vector<float> logits;
    QString error;
};

inline MtmdPromptLogits mtmdPromptLogits(const QString& tool, const QString& model, const QString& projector,
                                         const Image& image, const QString& dir,
                                         const QString& prompt = QStringLiteral("Look: <__media__> What is it?")) {
    MtmdPromptLogits r;
    const QString rgb = QDir(dir).filePath(QStringLiteral("prompt.rgb")), out = QDir(dir).filePath(QStringLiteral("prompt.f32"));
    writeRgb(image, rgb);
    QProcess run;
    run.start(tool, {model, projector, rgb, QString::number(image.width), QString::number(image.height), prompt, out});
    if (!run.waitForFinished(300000) || run.exitCode() != 0) {
        r.error = QString::fromUtf8(run.readAllStandardError().right(3000));
        return r;
    }
    // Chunks: text ids, the image's count, text ids; then the vocabulary's logits in `out`.
    for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
        const QStringList w = line.split(' ', Qt::SkipEmptyParts);
        if (w[0] == QStringLiteral("text")) {
            r.texts.emplace_back();
            for (int i = 1; i < w.size(); ++i) r.texts.back().push_back(w[i].toInt());
        } else if (w[0] == QStringLiteral("image")) {
            r.imageTokens = w[1].toLongLong();
        }
    }
    r.logits = readFloats(out);
    return r;
}

// The devices a tower is checked on: the reference backend, the CPU and vulkan:0 where present.
inline QStringList visionDevices() {
    QStringList d{QStringLiteral("ref"), QStringLiteral("cpu")};
    if (findDevice(listDevices(), "vulkan:0")) d << QStringLiteral("vulkan:0");
    return d;
}

} // namespace hearth::test

// Prepares `fixture` (test::MtmdFixture) for `preset` in an initTestCase: skips the test when the
// reference is not set up, fails it when preparing fails.
#define HEARTH_PREPARE_MTMD(fixture, preset)                                                         \
    do {                                                                                             \
        QVERIFY((fixture).dir.isValid());                                                            \
        bool mtmdSkip = false;                                                                       \
        const QString mtmdWhy = ::hearth::test::prepareMtmdReference((fixture).dir.path(), (preset), \
                                                                     (fixture).files, mtmdSkip);     \
        if (mtmdSkip) QSKIP(qPrintable(mtmdWhy));                                                   \
        QVERIFY2(mtmdWhy.isEmpty(), qPrintable(mtmdWhy));                                            \
    } while (false)
