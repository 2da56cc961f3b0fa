// Gemma 4's vision against llama.cpp's mtmd (tests/tools/ref_mtmd_embed and ref_mtmd_logits,
// built from the reference's source bundle): a random-weight "gemma4v" projector Hearth writes
// beside a synthesized gemma4 loads there; images of several sizes become as many embeddings as
// Hearth's patch grid says (mtmd's token budget), and Hearth's encoder gives mtmd's embeddings
// on every device.
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/vision.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestGemma4VisionReference : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_embedTool, m_logitsTool, m_model, m_projector;

    QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

    // A width x height picture of gradients and a pattern (raw pixels, as the decoder gives them).
    static Image picture(int width, int height) {
        Image im;
        im.width = width;
        im.height = height;
        im.rgb.resize(size_t(width) * size_t(height) * 3);
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x) {
                uint8_t* p = &im.rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
                p[0] = uint8_t((2 * x) % 256);
                p[1] = uint8_t((4 * y) % 256);
                p[2] = uint8_t((x * y) % 256);
            }
        return im;
    }

    QString writeRgb(const Image& image, const char* name) const {
        const QString rgb = path(name);
        std::ofstream f(rgb.toStdString(), std::ios::binary);
        f.write(reinterpret_cast<const char*>(image.rgb.data()), std::streamsize(image.rgb.size()));
        return rgb;
    }

    static std::vector<float> readFloats(const QString& file) {
        std::ifstream f(file.toStdString(), std::ios::binary | std::ios::ate);
        std::vector<float> v(size_t(int64_t(f.tellg()) / 4));
        f.seekg(0);
        f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
        return v;
    }

    // mtmd's embeddings of the image [tokens][width] and the shape it printed; empty on failure.
    std::vector<float> referenceEmbeddings(const Image& image, QStringList& shape, QString& error) {
        const QString rgb = writeRgb(image, "picture.rgb"), out = path("picture.f32");
        QProcess run;
        run.start(m_embedTool, {m_model, m_projector, rgb, QString::number(image.width),
                                QString::number(image.height), out});
        if (!run.waitForFinished(300000) || run.exitCode() != 0) {
            error = QString::fromUtf8(run.readAllStandardError().right(3000));
            return {};
        }
        shape = QString::fromUtf8(run.readAllStandardOutput()).trimmed().split(' ');
        return readFloats(out);
    }

    static QStringList devices() {
        QStringList d{QStringLiteral("ref"), QStringLiteral("cpu")};
        if (findDevice(listDevices(), "vulkan:0")) d << QStringLiteral("vulkan:0");
        return d;
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        test::ReferenceLogits ref;
        bool skip = false;
        const QString err = ref.build(m_dir.path(), skip);
        if (skip) QSKIP(qPrintable(err));
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QProcess build;
        build.start(QStringLiteral("bash"),
                    {test::sourceDir() + QStringLiteral("/tests/tools/build_ref_mtmd.sh"), ref.refDir});
        QVERIFY(build.waitForFinished(900000));
        QVERIFY2(build.exitCode() == 0, build.readAllStandardError().right(2000).constData());
        m_embedTool = QString::fromUtf8(build.readAllStandardOutput()).trimmed().split('\n').last();
        m_logitsTool = QFileInfo(m_embedTool).dir().filePath(QStringLiteral("ref_mtmd_logits"));
        m_model = path("gemma4-tiny.gguf");
        m_projector = path("gemma4-tiny-mmproj.gguf");
        QProcess synth;
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("gemma4-tiny"),
                     QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"),
                     QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), m_model, QStringLiteral("--mmproj"), m_projector});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().right(2000).constData());
    }

    // mtmd loads the projector beside the model; each picture's embeddings are as many as the
    // patch grid Hearth chooses gives (below and within the token budget; above it, mtmd's
    // encoding of ~10000 patches takes half a minute, test_gemma4_vision has its numbers), as
    // wide as the model.
    void gemma4TokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("gemma4v"));
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{640, 480}, std::pair{1000, 700}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> e = referenceEmbeddings(image, shape, error);
            QVERIFY2(!e.empty(), qPrintable(error));
            QCOMPARE(shape.size(), 2);
            const PatchGrid grid = patchGrid(*info, w, h);
            const int64_t tokens = int64_t(grid.columns / info->merge) * (grid.rows / info->merge);
            qInfo("%dx%d: %d x %d patches, %lld tokens (mtmd %s)", w, h, grid.columns, grid.rows,
                  (long long)tokens, qPrintable(shape[0]));
            QCOMPARE(shape[0].toLongLong(), tokens);
            QCOMPARE(shape[1].toInt(), info->projectionDim);
        }
    }

    // Hearth's Gemma 4 encoder against mtmd's on the reference, the CPU and lavapipe: pictures
    // scaled up to the budget's least (wide and tall, so padded) and one within it. Lavapipe
    // takes the first only: its attention over the 693 patches of even the least image takes
    // 15 s on a slow machine.
    void gemma4EmbeddingsEqualLlamaCpps() {
        const QStringList names = devices();
        std::vector<std::unique_ptr<VisionEncoder>> encoders;
        for (const QString& d : names) {
            VisionOptions o;
            o.device = d.toStdString();
            o.threads = 2;
            auto enc = VisionEncoder::open(m_projector.toStdString(), o);
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            encoders.push_back(std::move(enc).value());
        }
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{640, 480}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> want = referenceEmbeddings(image, shape, error);
            QVERIFY2(!want.empty(), qPrintable(error));
            float scale = 0.0f;
            for (float v : want) scale = std::max(scale, std::fabs(v));
            for (size_t d = 0; d < encoders.size(); ++d) {
                if (names[int(d)].startsWith(QStringLiteral("vulkan")) && w != 100) continue;
                auto got = encoders[d]->encode(image);
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                QCOMPARE(got->values.size(), want.size());
                float worst = 0.0f;
                for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                qInfo("%dx%d on %s: max |delta| %.3g (values up to %.3g)", w, h, qPrintable(names[int(d)]),
                      double(worst), double(scale));
                // llama.cpp's CPU quick GELU rounds its input to fp16 (a table): its embeddings are
                // that far from exact ones, ours not.
                QVERIFY2(worst <= 2e-3f * std::max(1.0f, scale),
                         qPrintable(QStringLiteral("%1x%2 on %3: max |delta| %4")
                                        .arg(w).arg(h).arg(names[int(d)]).arg(double(worst))));
            }
        }
    }

};

QTEST_GUILESS_MAIN(TestGemma4VisionReference)
#include "test_gemma4_vision_reference.moc"
