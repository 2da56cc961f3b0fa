// Mistral 3's Pixtral vision against llama.cpp's mtmd (tests/tools/ref_mtmd_embed, ref_mtmd_logits
// and ref_mtmd_preprocess, built from the reference's source bundle): a random-weight "pixtral"
// projector Hearth writes beside a synthesized mistral3-tiny (patches of 14 merged 2 x 2) loads
// there; images of several sizes become as many embeddings as Hearth's patch grid and its
// [IMG_BREAK] rows say, Hearth's preprocessing and encoder give mtmd's values on every device,
// and the text model reading them gives llama.cpp's logits and greedy answer.
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

#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestPixtralReference : public QObject {
    Q_OBJECT
    test::MtmdFixture m_ref;

    static Image picture(int width, int height) { return test::gradientPicture(width, height, 3, 5, 7); }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        HEARTH_PREPARE_MTMD(m_ref, QStringLiteral("mistral3-tiny"));
    }

    // mtmd loads the projector beside the model; each picture's embeddings are as many as the
    // merged patch grid Hearth chooses (within mtmd's budget of 8..1024, aspect kept) plus one
    // [IMG_BREAK] row after each row of them but the last, as wide as the model.
    void pixtralTokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_ref.files.projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("pixtral"));
        QCOMPARE(info->merge, 2);
        QCOMPARE(info->imageEnd, std::string("[IMG_END]"));
        QVERIFY2(checkProjectorFor(*info, m_ref.files.model.toStdString()).isOk(), "the projector does not fit the model");
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{20, 20}, std::pair{1200, 900}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> e = m_ref.embeddings(image, shape, error);
            QVERIFY2(!e.empty(), qPrintable(error));
            QCOMPARE(shape.size(), 2);
            const PatchGrid grid = patchGrid(*info, w, h);
            const int64_t columns = grid.columns / info->merge, rows = grid.rows / info->merge;
            const int64_t tokens = columns * rows + rows - 1;
            qInfo("%dx%d: %d x %d patches, %lld tokens with the breaks (mtmd %s)", w, h, grid.columns, grid.rows,
                  (long long)tokens, qPrintable(shape[0]));
            QCOMPARE(shape[0].toLongLong(), tokens);
            QCOMPARE(shape[1].toInt(), info->projectionDim);
        }
    }

    // Hearth's preprocessing (the grid, Pillow's bicubic resize, the black padding, the CLIP
    // normalisation) is mtmd's value for value (ref_mtmd_preprocess): wide, tall, small.
    void pixtralPreprocessingEqualsLlamaCpps() {
        auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{"cpu", 1});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        const QString tool = QFileInfo(m_ref.files.embedTool).dir().filePath(QStringLiteral("ref_mtmd_preprocess"));
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{20, 20}}) {
            test::checkPreprocessingEqualsMtmd(tool, m_ref.files.projector, **enc, picture(w, h), m_ref.dir.path());
            if (QTest::currentTestFailed()) return;
        }
    }

    // Hearth's Pixtral encoder against mtmd's on the reference, the CPU and lavapipe: a wide
    // picture, a tall one (both padded) and a larger one; lavapipe takes the first two.
    void pixtralEmbeddingsEqualLlamaCpps() {
        const QStringList names = test::visionDevices();
        std::vector<std::unique_ptr<VisionEncoder>> encoders;
        for (const QString& d : names) {
            auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            encoders.push_back(std::move(enc).value());
        }
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{300, 200}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> want = m_ref.embeddings(image, shape, error);
            QVERIFY2(!want.empty(), qPrintable(error));
            float scale = 0.0f;
            for (float v : want) scale = std::max(scale, std::fabs(v));
            for (size_t d = 0; d < encoders.size(); ++d) {
                if (names[int(d)].startsWith(QStringLiteral("vulkan")) && w == 300) continue;
                auto got = encoders[d]->encode(image);
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                QCOMPARE(got->values.size(), want.size());
                float worst = 0.0f;
                for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                qInfo("%dx%d on %s: %lld tokens, max |delta| %.3g (values up to %.3g)", w, h,
                      qPrintable(names[int(d)]), (long long)got->tokens, double(worst), double(scale));
                // llama.cpp's CPU GELU reads a table of fp16 inputs: its embeddings are that far
                // (2e-4 of the largest) from exact ones, ours not.
                QVERIFY2(worst <= 1e-3f * scale,
                         qPrintable(QStringLiteral("%1x%2 on %3: max |delta| %4")
                                        .arg(w).arg(h).arg(names[int(d)]).arg(double(worst))));
            }
        }
    }

    // A prompt with an image through llama.cpp (ref_mtmd_logits: its chunks' ids and the last
    // position's logits) and through Hearth's encoder and mistral3 in three steps: the text
    // before, the image's embeddings (seen causally, as mtmd decodes Pixtral's), the text after.
    // The last logits agree on every device, with Hearth's embeddings and with llama.cpp's (within
    // 9e-4 here).
    void pixtralTextLogitsAfterAnImageEqualLlamaCpps() {
        const Image image = picture(100, 60);
        const test::MtmdPromptLogits ref = test::mtmdPromptLogits(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, image, m_ref.dir.path());
        QVERIFY2(ref.error.isEmpty(), qPrintable(ref.error));
        const std::vector<std::vector<int32_t>>& texts = ref.texts;
        const int64_t imageTokens = ref.imageTokens;
        QCOMPARE(texts.size(), size_t(2));
        const std::vector<float>& want = ref.logits;
        auto encoder = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(encoder.isOk(), encoder.status().toString().c_str());
        auto embeddings = (*encoder)->encode(image);
        QVERIFY2(embeddings.isOk(), embeddings.status().toString().c_str());
        QCOMPARE(embeddings->tokens, imageTokens);

        auto file = gguf::File::open(m_ref.files.model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
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
            const bool own = values == &embeddings->values;
            test::ImagePrompt prompt;
            prompt.before = texts[0];
            prompt.after = texts[1];
            prompt.embeds = values;
            prompt.width = embeddings->width;
            std::vector<float> logits;
            const Status s = test::imagePromptLogits(**arch, device.toStdString(), prompt, logits);
            QVERIFY2(s.isOk(), qPrintable(device + QStringLiteral(": ") + QString::fromStdString(s.toString())));
            QCOMPARE(logits.size(), want.size());
            const test::LogitsDelta d = test::compareLogits(logits, want);
            qInfo("%s, %s embeddings: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)",
                  qPrintable(device), own ? "Hearth's" : "llama.cpp's", double(d.worst), d.argmax, d.wantArgmax);
            QVERIFY2(d.worst < 5e-3f,
                     qPrintable(device + QStringLiteral(": max |delta| ") + QString::number(double(d.worst))));
            QCOMPARE(d.argmax, d.wantArgmax);
        }
    }

    // hearth-cli run with --mmproj and --image: the prompt's text ids are mtmd's chunks' ("[IMG_END]"
    // after the image, nothing before it) and the greedy answer is llama.cpp's, token for token,
    // on the CPU and lavapipe.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        test::checkCliGreedyAboutAnImage(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, picture(100, 60), m_ref.dir.path());
    }
};

QTEST_GUILESS_MAIN(TestPixtralReference)
#include "test_pixtral_reference.moc"
