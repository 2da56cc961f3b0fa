// Vision against llama.cpp's mtmd (tests/tools/ref_mtmd_embed, built from the reference's source
// bundle): a random-weight Gemma 3 projector Hearth writes loads there beside its text model, and
// an image Hearth decodes becomes as many embeddings, as wide, as readProjector says.
#include "hearth/image.h"
#include "hearth/projector.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QBuffer>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestVisionReference : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_tool, m_model, m_projector;

    QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        test::ReferenceLogits ref;
        bool skip = false;
        const QString err = ref.build(m_dir.path(), skip);
        if (skip) QSKIP(qPrintable(err));
        QVERIFY2(err.isEmpty(), qPrintable(err));
        QProcess build;
        build.start(
            QStringLiteral("bash"),
            {test::sourceDir() + QStringLiteral("/tests/tools/build_ref_mtmd.sh"), ref.refDir});
        QVERIFY(build.waitForFinished(900000));
        QVERIFY2(build.exitCode() == 0, build.readAllStandardError().right(2000).constData());
        m_tool = QString::fromUtf8(build.readAllStandardOutput()).trimmed().split('\n').last();
        m_model = path("gemma3-tiny.gguf");
        m_projector = path("gemma3-tiny-mmproj.gguf");
        QProcess synth;
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"),
                     QStringLiteral("gemma3-tiny"), QStringLiteral("--type"), QStringLiteral("F32"),
                     QStringLiteral("--vocab"),
                     QString::fromStdString(
                         test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), m_model, QStringLiteral("--mmproj"), m_projector});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().right(2000).constData());
    }

    void gemma3ProjectorLoadsAndEncodesInLlamaCpp() {
        auto info = readProjector(m_projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QVERIFY(checkProjectorFor(*info, m_model.toStdString()).isOk());
        // A 100 x 60 picture (not the encoder's square size), through Hearth's decoder.
        QImage picture(100, 60, QImage::Format_RGB888);
        for (int y = 0; y < 60; ++y)
            for (int x = 0; x < 100; ++x)
                picture.setPixelColor(x, y, QColor(2 * x, 4 * y, (x * y) % 256));
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        QVERIFY(picture.save(&buffer, "PNG"));
        auto image = decodeImage(std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(png.constData()), size_t(png.size())));
        QVERIFY2(image.isOk(), image.status().toString().c_str());
        const QString rgb = path("picture.rgb"), out = path("picture.f32");
        {
            std::ofstream f(rgb.toStdString(), std::ios::binary);
            f.write(reinterpret_cast<const char*>(image->rgb.data()),
                    std::streamsize(image->rgb.size()));
        }
        QProcess run;
        run.start(m_tool, {m_model, m_projector, rgb, QString::number(image->width),
                           QString::number(image->height), out});
        QVERIFY(run.waitForFinished(300000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
        const QStringList shape =
            QString::fromUtf8(run.readAllStandardOutput()).trimmed().split(' ');
        QCOMPARE(shape.size(), 2);
        QCOMPARE(shape[0].toLongLong(), info->tokensPerImage);
        QCOMPARE(shape[1].toInt(), info->projectionDim);
        std::ifstream f(out.toStdString(), std::ios::binary | std::ios::ate);
        QCOMPARE(int64_t(f.tellg()), info->tokensPerImage * info->projectionDim * 4);
        f.seekg(0);
        std::vector<float> e(size_t(info->tokensPerImage * info->projectionDim));
        f.read(reinterpret_cast<char*>(e.data()), std::streamsize(e.size() * 4));
        double energy = 0.0;
        for (float v : e) {
            QVERIFY(std::isfinite(v));
            energy += double(v) * v;
        }
        QVERIFY(energy > 0.0);
        qInfo("llama.cpp's mtmd: %lld embeddings of %d from Hearth's projector",
              (long long)info->tokensPerImage, info->projectionDim);
    }
};

QTEST_GUILESS_MAIN(TestVisionReference)
#include "test_vision_reference.moc"
