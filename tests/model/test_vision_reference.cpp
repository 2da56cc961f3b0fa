// Vision against llama.cpp's mtmd (tests/tools/ref_mtmd_embed, built from the reference's source
// bundle): a random-weight Gemma 3 projector Hearth writes loads there beside its text model, and
// an image Hearth decodes becomes as many embeddings, as wide, as readProjector says, and Hearth's
// own encoder (hearth/vision.h) gives the same embeddings on every device, and the text model
// reading them in place of the image's tokens gives llama.cpp's logits after them.
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/vision.h"
#include "model/arch.h"
#include "cli_image_greedy.h"
#include "image_prompt_logits.h"
#include "mtmd_reference.h"
#include "reference_logits.h"
#include "test_support.h"

#include <QBuffer>
#include <QDir>
#include <QFileInfo>
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

    // A width x height picture of gradients and a pattern, through Hearth's PNG decoder.
    static Image picture(int width, int height) {
        QImage q(width, height, QImage::Format_RGB888);
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x)
                q.setPixelColor(x, y, QColor((2 * x) % 256, (4 * y) % 256, (x * y) % 256));
        QByteArray png;
        QBuffer buffer(&png);
        buffer.open(QIODevice::WriteOnly);
        q.save(&buffer, "PNG");
        auto image = decodeImage(std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(png.constData()), size_t(png.size())));
        return image.isOk() ? std::move(image).value() : Image{};
    }

    // llama.cpp's embeddings of the image through m_projector: [tokens][width] and the shape it
    // printed; empty on failure (the reason in `error`).
    std::vector<float> referenceEmbeddings(const Image& image, QStringList& shape, QString& error) {
        return test::mtmdEmbeddings(m_tool, m_model, m_projector, image, m_dir.path(), shape, error);
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        test::MtmdFiles files;
        bool skip = false;
        const QString why = test::prepareMtmdReference(m_dir.path(), QStringLiteral("gemma3-tiny"), files, skip);
        if (skip) QSKIP(qPrintable(why));
        QVERIFY2(why.isEmpty(), qPrintable(why));
        m_tool = files.embedTool;
        m_model = files.model;
        m_projector = files.projector;
    }

    void gemma3ProjectorLoadsAndEncodesInLlamaCpp() {
        auto info = readProjector(m_projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QVERIFY(checkProjectorFor(*info, m_model.toStdString()).isOk());
        // A 100 x 60 picture (not the encoder's square size), through Hearth's decoder.
        const Image image = picture(100, 60);
        QCOMPARE(image.width, 100);
        QStringList shape;
        QString error;
        const std::vector<float> e = referenceEmbeddings(image, shape, error);
        QVERIFY2(!e.empty(), qPrintable(error));
        QCOMPARE(shape.size(), 2);
        QCOMPARE(shape[0].toLongLong(), info->tokensPerImage);
        QCOMPARE(shape[1].toInt(), info->projectionDim);
        QCOMPARE(int64_t(e.size()), info->tokensPerImage * info->projectionDim);
        double energy = 0.0;
        for (float v : e) {
            QVERIFY(std::isfinite(v));
            energy += double(v) * v;
        }
        QVERIFY(energy > 0.0);
        qInfo("llama.cpp's mtmd: %lld embeddings of %d from Hearth's projector",
              (long long)info->tokensPerImage, info->projectionDim);
    }

    // A prompt with an image in it, through llama.cpp (ref_mtmd_logits: its chunks' tokens and
    // the last position's logits) and through Hearth's encoder and text model in three steps:
    // the text before (causal), the image's embeddings (all at once, as mtmd decodes Gemma 3's),
    // the text after. The last logits agree on every device (seen one by one, causally, the
    // image's tokens give logits 0.29 away).
    void gemma3TextLogitsAfterAnImageEqualLlamaCpps() {
        const Image image = picture(100, 60);
        const test::MtmdPromptLogits ref = test::mtmdPromptLogits(QFileInfo(m_tool).dir().filePath(QStringLiteral("ref_mtmd_logits")), m_model, m_projector, image, m_dir.path());
        QVERIFY2(ref.error.isEmpty(), qPrintable(ref.error));
        const std::vector<std::vector<int32_t>>& texts = ref.texts;
        const int64_t imageTokens = ref.imageTokens;
        QCOMPARE(texts.size(), size_t(2));
        const std::vector<float>& want = ref.logits;
        auto encoder = VisionEncoder::open(m_projector.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(encoder.isOk(), encoder.status().toString().c_str());
        auto embeddings = (*encoder)->encode(image);
        QVERIFY2(embeddings.isOk(), embeddings.status().toString().c_str());
        QCOMPARE(embeddings->tokens, imageTokens);

        auto file = gguf::File::open(m_model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QVERIFY((*arch)->dims().givenEmbeddings);
        for (const QString& device : test::visionDevices()) {
            test::ImagePrompt prompt;
            prompt.before = texts[0];
            prompt.after = texts[1];
            prompt.embeds = &embeddings->values;
            prompt.width = embeddings->width;
            prompt.atOnce = true; // Gemma 3 sees an image's tokens at once
            std::vector<float> logits;
            const Status s = test::imagePromptLogits(**arch, device.toStdString(), prompt, logits);
            QVERIFY2(s.isOk(), qPrintable(device + QStringLiteral(": ") + QString::fromStdString(s.toString())));
            QCOMPARE(logits.size(), want.size());
            const test::LogitsDelta d = test::compareLogits(logits, want);
            qInfo("%s: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)", qPrintable(device),
                  double(d.worst), d.argmax, d.wantArgmax);
            QVERIFY2(d.worst < 2e-2f,
                     qPrintable(device + QStringLiteral(": max |delta| ") + QString::number(double(d.worst))));
            QCOMPARE(d.argmax, d.wantArgmax);
        }
    }

    // hearth-cli run with --mmproj and --image: the prompt's text ids are mtmd's chunks' and the
    // greedy answer is llama.cpp's, token for token, on the CPU and lavapipe.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        test::checkCliGreedyAboutAnImage(QFileInfo(m_tool).dir().filePath(QStringLiteral("ref_mtmd_logits")), m_model,
                                         m_projector, picture(100, 60), m_dir.path());
    }

    // Hearth's Gemma 3 encoder against mtmd's: pictures wider, taller and of the encoder's own
    // size (resize and padding), on the reference, the CPU and lavapipe.
    void gemma3EmbeddingsEqualLlamaCpps() {
        QStringList devices{QStringLiteral("ref"), QStringLiteral("cpu")};
        if (findDevice(listDevices(), "vulkan:0")) devices << QStringLiteral("vulkan:0");
        std::vector<std::unique_ptr<VisionEncoder>> encoders;
        for (const QString& d : devices) {
            VisionOptions o;
            o.device = d.toStdString();
            o.threads = 2;
            auto enc = VisionEncoder::open(m_projector.toStdString(), o);
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            encoders.push_back(std::move(enc).value());
        }
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{224, 224}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> want = referenceEmbeddings(image, shape, error);
            QVERIFY2(!want.empty(), qPrintable(error));
            float scale = 0.0f;
            for (float v : want) scale = std::max(scale, std::fabs(v));
            for (size_t d = 0; d < encoders.size(); ++d) {
                auto got = encoders[d]->encode(image);
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                QCOMPARE(got->values.size(), want.size());
                float worst = 0.0f;
                for (size_t i = 0; i < want.size(); ++i)
                    worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                qInfo("%dx%d on %s: max |delta| %.3g (values up to %.3g)", w, h,
                      qPrintable(devices[int(d)]), double(worst), double(scale));
                // llama.cpp's CPU GELU rounds its input and output to fp16 (a table): its
                // embeddings are that far from exact ones, ours not.
                QVERIFY2(worst <= 2e-3f * std::max(1.0f, scale),
                         qPrintable(QStringLiteral("%1x%2 on %3: max |delta| %4")
                                        .arg(w).arg(h).arg(devices[int(d)]).arg(double(worst))));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestVisionReference)
#include "test_vision_reference.moc"
