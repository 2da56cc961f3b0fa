// Gemma 4's vision against llama.cpp's mtmd (tests/tools/ref_mtmd_embed and ref_mtmd_logits,
// built from the reference's source bundle): a random-weight "gemma4v" projector Hearth writes
// beside a synthesized gemma4 loads there; images of several sizes become as many embeddings as
// Hearth's patch grid says (mtmd's token budget), Hearth's encoder gives mtmd's embeddings on
// every device, and the text model reading them gives llama.cpp's logits and greedy answer.
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

class TestGemma4VisionReference : public QObject {
    Q_OBJECT
    test::MtmdFixture m_ref;

    static Image picture(int width, int height) { return test::gradientPicture(width, height); }

    // A prompt with an image through llama.cpp (ref_mtmd_logits: its chunks' ids and the last
    // position's logits) and through Hearth's encoder and the model in three steps: the text before,
    // the image's embeddings (all at once: mtmd decodes gemma4v's non-causally but for E2B's and
    // E4B's widths), the text after. The last logits agree on every device (1.8e-3 of the 2.1e-3
    // is the text model's own: with llama.cpp's embeddings; seen causally, the image's tokens
    // give logits 0.85 away).
    void logitsAfterAnImage(const QString& model, const QString& projector) {
        const Image image = picture(100, 60);
        const test::MtmdPromptLogits ref = test::mtmdPromptLogits(m_ref.files.logitsTool, model, projector, image, m_ref.dir.path());
        QVERIFY2(ref.error.isEmpty(), qPrintable(ref.error));
        const std::vector<std::vector<int32_t>>& texts = ref.texts;
        const int64_t imageTokens = ref.imageTokens;
        QCOMPARE(texts.size(), size_t(2));
        const std::vector<float>& want = ref.logits;
        auto encoder = VisionEncoder::open(projector.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(encoder.isOk(), encoder.status().toString().c_str());
        auto embeddings = (*encoder)->encode(image);
        QVERIFY2(embeddings.isOk(), embeddings.status().toString().c_str());
        QCOMPARE(embeddings->tokens, imageTokens);

        auto file = gguf::File::open(model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QVERIFY((*arch)->dims().givenEmbeddings);
        QVERIFY((*arch)->dims().imagesAtOnce);
        // llama.cpp's own embeddings of the picture through Hearth's text model too (on the CPU):
        // the text side alone, without the encoders' difference.
        QStringList shape;
        QString error;
        const std::vector<float> theirs = m_ref.embeddings(image, shape, error, model, projector);
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
            prompt.atOnce = true;
            std::vector<float> logits;
            const Status s = test::imagePromptLogits(**arch, device.toStdString(), prompt, logits);
            QVERIFY2(s.isOk(), qPrintable(device + QStringLiteral(": ") + QString::fromStdString(s.toString())));
            QCOMPARE(logits.size(), want.size());
            const test::LogitsDelta d = test::compareLogits(logits, want);
            qInfo("%s, %s embeddings: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)",
                  qPrintable(device), own ? "Hearth's" : "llama.cpp's", double(d.worst), d.argmax, d.wantArgmax);
            QVERIFY2(d.worst < (own ? 1e-2f : 5e-3f),
                     qPrintable(device + QStringLiteral(": max |delta| ") + QString::number(double(d.worst))));
            QCOMPARE(d.argmax, d.wantArgmax);
        }
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        HEARTH_PREPARE_MTMD(m_ref, QStringLiteral("gemma4-tiny"));
    }

    // mtmd loads the projector beside the model; each picture's embeddings are as many as the
    // patch grid Hearth chooses gives (below and within the token budget; above it, mtmd's
    // encoding of ~10000 patches takes half a minute, test_gemma4_vision has its numbers), as
    // wide as the model.
    void gemma4TokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_ref.files.projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("gemma4v"));
        QVERIFY2(checkProjectorFor(*info, m_ref.files.model.toStdString()).isOk(), "the projector does not fit the model");
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{640, 480}, std::pair{1000, 700}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> e = m_ref.embeddings(image, shape, error);
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

    // Hearth's preprocessing (the grid, Pillow's bicubic resize, the black padding, /255) is
    // mtmd's value for value (ref_mtmd_preprocess), then mapped to 2v - 1: wide, tall, within.
    void gemma4PreprocessingEqualsLlamaCpps() {
        auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{"cpu", 1});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        const QString tool = QFileInfo(m_ref.files.embedTool).dir().filePath(QStringLiteral("ref_mtmd_preprocess"));
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{640, 480}}) {
            test::checkPreprocessingEqualsMtmd(tool, m_ref.files.projector, **enc, picture(w, h), m_ref.dir.path(), true);
            if (QTest::currentTestFailed()) return;
        }
    }

    // Hearth's Gemma 4 encoder against mtmd's on the reference, the CPU and lavapipe: pictures
    // scaled up to the budget's least (wide and tall, so padded) and one within it. Lavapipe
    // takes the first only: its attention over the 693 patches of even the least image takes
    // 15 s on a slow machine.
    void gemma4EmbeddingsEqualLlamaCpps() {
        const QStringList names = test::visionDevices();
        std::vector<std::unique_ptr<VisionEncoder>> encoders;
        for (const QString& d : names) {
            VisionOptions o;
            o.device = d.toStdString();
            o.threads = 2;
            auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), o);
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            encoders.push_back(std::move(enc).value());
        }
        for (auto [w, h] : {std::pair{100, 60}, std::pair{37, 250}, std::pair{640, 480}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> want = m_ref.embeddings(image, shape, error);
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

    // Gemma 4's clamped linears (bounds beside every linear weight, as the converter writes
    // them): mtmd clamps inputs and outputs, so does Hearth; the bounds bite (the same weights
    // without them give other embeddings).
    void gemma4ClampedEmbeddingsEqualLlamaCpps() {
        auto write = [&](const char* name, bool clamps) {
            ProjectorSynthOptions o;
            o.family = "gemma4v";
            o.patchSize = 16;
            o.merge = 3;
            o.nEmbd = 64;
            o.nFf = 128;
            o.nLayer = 2;
            o.nHead = 4;
            o.positionSize = 256;
            o.projectionDim = 256; // gemma4-tiny's width
            o.clamps = clamps;
            o.outPath = m_ref.path(name).toStdString();
            const Status s = synthesizeProjector(o);
            return s.isOk() ? QString::fromStdString(o.outPath) : QString();
        };
        const QString clamped = write("clamped-mmproj.gguf", true), plain = write("plain-mmproj.gguf", false);
        QVERIFY(!clamped.isEmpty() && !plain.isEmpty());
        const Image image = picture(100, 60);
        QStringList shape;
        QString error;
        const std::vector<float> want = m_ref.embeddings(image, shape, error, m_ref.files.model, clamped);
        QVERIFY2(!want.empty(), qPrintable(error));
        auto unclamped = VisionEncoder::open(plain.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(unclamped.isOk(), unclamped.status().toString().c_str());
        auto loose = (*unclamped)->encode(image);
        QVERIFY2(loose.isOk(), loose.status().toString().c_str());
        for (const QString& d : test::visionDevices()) {
            auto enc = VisionEncoder::open(clamped.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            auto got = (*enc)->encode(image);
            QVERIFY2(got.isOk(), got.status().toString().c_str());
            QCOMPARE(got->values.size(), want.size());
            float worst = 0.0f, bite = 0.0f;
            for (size_t i = 0; i < want.size(); ++i) {
                worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                bite = std::max(bite, std::fabs(got->values[i] - loose->values[i]));
            }
            qInfo("clamped, %s: max |delta| %.3g (without the clamps: %.3g away)", qPrintable(d), double(worst),
                  double(bite));
            QVERIFY2(worst <= 2e-3f, qPrintable(d + QStringLiteral(": max |delta| ") + QString::number(double(worst))));
            QVERIFY(bite > 5e-2f);
        }
    }

    void gemma4TextLogitsAfterAnImageEqualLlamaCpps() { logitsAfterAnImage(m_ref.files.model, m_ref.files.projector); }

    // The same with per-layer embeddings (gemma4-e-tiny, as E2B and E4B; its width, not theirs,
    // so seen at once): an image's tokens take token 0's rows of the per-layer table.
    void gemma4PerLayerTextLogitsAfterAnImageEqualLlamaCpps() {
        const QString model = m_ref.path("gemma4-e-tiny.gguf"), projector = m_ref.path("gemma4-e-tiny-mmproj.gguf");
        QProcess synth;
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("gemma4-e-tiny"),
                     QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"),
                     QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), model, QStringLiteral("--mmproj"), projector});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().right(2000).constData());
        logitsAfterAnImage(model, projector);
    }

    // hearth-cli run with --mmproj and --image: the prompt's text ids are mtmd's chunks' (with
    // Gemma 4's "<|image>" and "<image|>" around the image) and the greedy answer is llama.cpp's,
    // token for token, on the CPU and lavapipe.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        test::checkCliGreedyAboutAnImage(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, picture(100, 60), m_ref.dir.path());
    }
};

QTEST_GUILESS_MAIN(TestGemma4VisionReference)
#include "test_gemma4_vision_reference.moc"
