// LLaVA's CLIP vision tower with its MLP projector against llama.cpp's mtmd (tests/tools/
// ref_mtmd_embed and ref_mtmd_preprocess): a random-weight "mlp" projector Hearth writes beside a
// synthesized llama-tiny (224 pixels, 14-pixel patches, 3 layers of which the features take
// two) loads there; every picture becomes the 256 embeddings mtmd gives, and Hearth's encoder
// gives mtmd's embeddings on every device for pictures padded into the square (so the bicubic
// resize and LLaVA's mean-colour padding are checked through them: ref_mtmd_preprocess runs only
// the dynamic-size preprocessor); and llama, loaded with the projector, reading them gives
// llama.cpp's logits after the image and its greedy answer (ref_mtmd_logits).
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

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestLlavaReference : public QObject {
    Q_OBJECT
    test::MtmdFixture m_ref;

    static Image picture(int width, int height) { return test::gradientPicture(width, height, 3, 5, 7); }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        HEARTH_PREPARE_MTMD(m_ref, QStringLiteral("llama-tiny"));
    }

    // mtmd loads the projector; every picture is the encoder's square of 16 x 16 patches, 256
    // embeddings as wide as the model.
    void llavaTokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_ref.files.projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("mlp"));
        QCOMPARE(info->tokensPerImage, int64_t(256));
        const Status fits = checkProjectorFor(*info, m_ref.files.model.toStdString());
        QVERIFY2(fits.isOk(), fits.toString().c_str());
        for (auto [w, h] : {std::pair{100, 60}, std::pair{224, 224}}) {
            QStringList shape;
            QString error;
            const std::vector<float> e = m_ref.embeddings(picture(w, h), shape, error);
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
            auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}}) {
                if (d.startsWith(QStringLiteral("vulkan")) && w != 100) continue;
                const Image image = picture(w, h);
                QStringList shape;
                QString error;
                const std::vector<float> want = m_ref.embeddings(image, shape, error);
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

    // A prompt with an image through llama.cpp (ref_mtmd_logits: its chunks' ids and the last
    // position's logits) and through Hearth's encoder and llama in three steps: the text before,
    // the image's embeddings (seen causally, as mtmd decodes LLaVA's), the text after. The last
    // logits agree on every device, with Hearth's embeddings and with llama.cpp's. Without the
    // projector llama reads no image.
    void llavaTextLogitsAfterAnImageEqualLlamaCpps() {
        const Image image = picture(100, 60);
        const test::MtmdPromptLogits ref =
            test::mtmdPromptLogits(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, image, m_ref.dir.path());
        QVERIFY2(ref.error.isEmpty(), qPrintable(ref.error));
        QCOMPARE(ref.texts.size(), size_t(2));
        auto encoder = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(encoder.isOk(), encoder.status().toString().c_str());
        auto embeddings = (*encoder)->encode(image);
        QVERIFY2(embeddings.isOk(), embeddings.status().toString().c_str());
        QCOMPARE(embeddings->tokens, ref.imageTokens);

        auto file = gguf::File::open(m_ref.files.model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto textOnly = model::loadArchitecture(*file);
        QVERIFY2(textOnly.isOk(), textOnly.status().toString().c_str());
        QVERIFY(!(*textOnly)->dims().givenEmbeddings);
        model::ArchitectureOptions withProjector;
        withProjector.projector = true;
        auto arch = model::loadArchitecture(*file, withProjector);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QVERIFY((*arch)->dims().givenEmbeddings);
        QVERIFY(!(*arch)->dims().imagesAtOnce);
        QStringList shape;
        QString error;
        const std::vector<float> theirs = m_ref.embeddings(image, shape, error);
        QVERIFY2(theirs.size() == embeddings->values.size(), qPrintable(error));
        std::vector<std::pair<QString, const std::vector<float>*>> runs;
        for (const QString& device : test::visionDevices()) runs.emplace_back(device, &embeddings->values);
        runs.emplace_back(QStringLiteral("cpu"), &theirs);
        for (const auto& [device, values] : runs) {
            test::ImagePrompt prompt;
            prompt.before = ref.texts[0];
            prompt.after = ref.texts[1];
            prompt.embeds = values;
            prompt.width = embeddings->width;
            std::vector<float> logits;
            const Status s = test::imagePromptLogits(**arch, device.toStdString(), prompt, logits);
            QVERIFY2(s.isOk(), qPrintable(device + QStringLiteral(": ") + QString::fromStdString(s.toString())));
            QCOMPARE(logits.size(), ref.logits.size());
            const test::LogitsDelta d = test::compareLogits(logits, ref.logits);
            qInfo("%s, %s embeddings: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)",
                  qPrintable(device), values == &embeddings->values ? "Hearth's" : "llama.cpp's", double(d.worst),
                  d.argmax, d.wantArgmax);
            QVERIFY2(d.worst < 5e-3f,
                     qPrintable(device + QStringLiteral(": max |delta| ") + QString::number(double(d.worst))));
            QCOMPARE(d.argmax, d.wantArgmax);
        }
    }

    // hearth-cli run with --mmproj and --image: the prompt's text ids are mtmd's chunks' (nothing
    // around the image) and the greedy answer is llama.cpp's, token for token, on the CPU and
    // lavapipe.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        test::checkCliGreedyAboutAnImage(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, picture(100, 60), m_ref.dir.path());
    }
};

QTEST_GUILESS_MAIN(TestLlavaReference)
#include "test_llava_reference.moc"
