// LLaVA's CLIP vision tower with its MLP projector against llama.cpp's mtmd (tests/tools/
// ref_mtmd_embed and ref_mtmd_preprocess): a random-weight "mlp" projector Hearth writes beside a
// synthesized llama-tiny (224 pixels, 14-pixel patches, 3 layers of which the features take
// two) loads there; every picture becomes the 256 embeddings mtmd gives, and Hearth's encoder
// gives mtmd's embeddings on every device for pictures padded into the square (so the bicubic
// resize and LLaVA's mean-colour padding are checked through them: ref_mtmd_preprocess runs only
// the dynamic-size preprocessor). The llama text model does not read image embeddings in Hearth
// yet: no logits test.
#include "hearth/devices.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/vision.h"
#include "mtmd_reference.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestLlavaReference : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_embedTool, m_model, m_projector;

    QString path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)); }

    static Image picture(int width, int height) { return test::gradientPicture(width, height, 3, 5, 7); }

    QString writeRgb(const Image& image, const char* name) const {
        const QString file = path(name);
        test::writeRgb(image, file);
        return file;
    }


    // mtmd's embeddings of the image [tokens][width] and the shape it printed; empty on failure.
    std::vector<float> referenceEmbeddings(const Image& image, QStringList& shape, QString& error) {
        return test::mtmdEmbeddings(m_embedTool, m_model, m_projector, image, m_dir.path(), shape, error);
    }


private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        test::MtmdFiles files;
        bool skip = false;
        const QString why = test::prepareMtmdReference(m_dir.path(), QStringLiteral("llama-tiny"), files, skip);
        if (skip) QSKIP(qPrintable(why));
        QVERIFY2(why.isEmpty(), qPrintable(why));
        m_embedTool = files.embedTool;
        m_model = files.model;
        m_projector = files.projector;
    }

    // mtmd loads the projector; every picture is the encoder's square of 16 x 16 patches, 256
    // embeddings as wide as the model.
    void llavaTokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("mlp"));
        QCOMPARE(info->tokensPerImage, int64_t(256));
        for (auto [w, h] : {std::pair{100, 60}, std::pair{224, 224}}) {
            QStringList shape;
            QString error;
            const std::vector<float> e = referenceEmbeddings(picture(w, h), shape, error);
            QVERIFY2(!e.empty(), qPrintable(error));
            QCOMPARE(shape.size(), 2);
            QCOMPARE(shape[0].toLongLong(), info->tokensPerImage);
            QCOMPARE(shape[1].toInt(), info->projectionDim);
        }
    }

    // Hearth's encoder against mtmd's on the reference, the CPU and lavapipe (mtmd's rows: every
    // patch but the first, then the class token).
    void llavaEmbeddingsEqualLlamaCpps() {
        const QStringList names = test::visionDevices();
        for (const QString& d : names) {
            auto enc = VisionEncoder::open(m_projector.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}}) {
                if (d.startsWith(QStringLiteral("vulkan")) && w != 100) continue;
                const Image image = picture(w, h);
                QStringList shape;
                QString error;
                const std::vector<float> want = referenceEmbeddings(image, shape, error);
                QVERIFY2(!want.empty(), qPrintable(error));
                float scale = 0.0f;
                for (float v : want) scale = std::max(scale, std::fabs(v));
                auto got = (*enc)->encode(image);
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                QCOMPARE(got->values.size(), want.size());
                float worst = 0.0f;
                for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                qInfo("%dx%d on %s: max |delta| %.3g (values up to %.3g)", w, h, qPrintable(d), double(worst),
                      double(scale));
                // llama.cpp's CPU GELU and quick GELU read tables of fp16 inputs.
                QVERIFY2(worst <= 2e-3f * std::max(scale, 1e-3f),
                         qPrintable(QStringLiteral("%1x%2 on %3: max |delta| %4").arg(w).arg(h).arg(d).arg(double(worst))));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestLlavaReference)
#include "test_llava_reference.moc"
