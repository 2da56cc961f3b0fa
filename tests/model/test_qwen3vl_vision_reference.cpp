// Qwen3-VL's vision tower (projector type qwen3vl_merger, Qwen3-VL's and Qwen3.5's) against
// llama.cpp's mtmd (tests/tools/ref_mtmd_embed, ref_mtmd_preprocess, built from the reference's
// source bundle): a random-weight projector Hearth writes beside a synthesized qwen35-tiny loads
// there; images become as many embeddings as Hearth's patch grid says (mtmd's smart resize),
// Hearth's preprocessing is mtmd's value for value, and Hearth's encoder gives mtmd's embeddings
// on every device, with deepstack mergers and without.
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
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fstream>

using namespace hearth;

class TestQwen3VlVisionReference : public QObject {
    Q_OBJECT
    test::MtmdFixture m_ref;

    static Image picture(int width, int height) { return test::gradientPicture(width, height); }

    // Hearth's embeddings of each picture against mtmd's on every device; the worst difference.
    void compareEmbeddings(const QString& projector, const std::vector<std::pair<int, int>>& sizes) {
        const QStringList names = test::visionDevices();
        for (const QString& d : names) {
            auto enc = VisionEncoder::open(projector.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            for (auto [w, h] : sizes) {
                const Image image = picture(w, h);
                QStringList shape;
                QString error;
                const std::vector<float> want = m_ref.embeddings(image, shape, error, m_ref.files.model, projector);
                QVERIFY2(!want.empty(), qPrintable(error));
                float scale = 0.0f;
                for (float v : want) scale = std::max(scale, std::fabs(v));
                auto got = (*enc)->encode(image);
                QVERIFY2(got.isOk(), got.status().toString().c_str());
                QCOMPARE(got->values.size(), want.size());
                QCOMPARE(QString::number(got->width), shape[1]);
                float worst = 0.0f;
                for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got->values[i] - want[i]));
                qInfo("%dx%d on %s: %lld tokens x %d, max |delta| %.3g (values up to %.3g)", w, h, qPrintable(d),
                      (long long)got->tokens, got->width, double(worst), double(scale));
                // llama.cpp's CPU GELU rounds its input to fp16 (a table): its embeddings are that
                // far from exact ones, ours not.
                QVERIFY2(worst <= 2e-3f * std::max(1.0f, scale),
                         qPrintable(QStringLiteral("%1x%2 on %3: max |delta| %4").arg(w).arg(h).arg(d).arg(double(worst))));
            }
        }
    }

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        HEARTH_PREPARE_MTMD(m_ref, QStringLiteral("qwen35-tiny"));
    }

    // mtmd loads the projector beside the model; each picture's embeddings are as many as the
    // patch grid Hearth chooses gives (below the budget's least, within it, square), as wide as
    // the model.
    void qwen3vlTokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_ref.files.projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("qwen3vl_merger"));
        QCOMPARE(info->merge, 2);
        QVERIFY2(checkProjectorFor(*info, m_ref.files.model.toStdString()).isOk(), "the projector does not fit the model");
        for (auto [w, h] : {std::pair{40, 30}, std::pair{37, 250}, std::pair{128, 96}, std::pair{1024, 768}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> e = m_ref.embeddings(image, shape, error);
            QVERIFY2(!e.empty(), qPrintable(error));
            QCOMPARE(shape.size(), 2);
            const PatchGrid grid = patchGrid(*info, w, h);
            const int64_t tokens = int64_t(grid.columns / 2) * (grid.rows / 2);
            qInfo("%dx%d: %d x %d patches, %lld tokens (mtmd %s)", w, h, grid.columns, grid.rows, (long long)tokens,
                  qPrintable(shape[0]));
            QCOMPARE(shape[0].toLongLong(), tokens);
            QCOMPARE(shape[1].toInt(), info->projectionDim);
        }
    }

    // A projector of the model's width but another family's (Gemma 3's) is refused for
    // qwen35, naming both: its embeddings are not what qwen35 reads.
    void anotherFamilysProjectorDoesNotServeQwen35() {
        ProjectorSynthOptions o;
        o.imageSize = 224;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.projectionDim = 256; // qwen35-tiny's width
        o.outPath = m_ref.path("gemma3-mmproj.gguf").toStdString();
        QVERIFY2(synthesizeProjector(o).isOk(), "the Gemma 3 projector was not written");
        auto info = readProjector(o.outPath);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        const Status s = checkProjectorFor(*info, m_ref.files.model.toStdString());
        QCOMPARE(s.code(), ErrorCode::InvalidArgument);
        QVERIFY2(s.message().find("another model") != std::string::npos &&
                     s.message().find("qwen3vl_merger") != std::string::npos,
                 s.toString().c_str());
    }

    // Hearth's preprocessing (the grid, Pillow's bicubic resize, the black padding, the mean and
    // deviation of 0.5) is mtmd's value for value (ref_mtmd_preprocess).
    void qwen3vlPreprocessingEqualsLlamaCpps() {
        auto enc = VisionEncoder::open(m_ref.files.projector.toStdString(), VisionOptions{"cpu", 1});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        const QString tool = QFileInfo(m_ref.files.embedTool).dir().filePath(QStringLiteral("ref_mtmd_preprocess"));
        for (auto [w, h] : {std::pair{40, 30}, std::pair{37, 250}, std::pair{128, 96}}) {
            test::checkPreprocessingEqualsMtmd(tool, m_ref.files.projector, **enc, picture(w, h), m_ref.dir.path());
            if (QTest::currentTestFailed()) return;
        }
    }

    // Hearth's encoder against mtmd's on the reference, the CPU and lavapipe: a 4:3 picture
    // (1024 x 768 scaled down: 16 x 12 patches, the 8 x 8 position table interpolated), a tall
    // one scaled up to the budget's least, and a square one on the table's own grid.
    void qwen3vlEmbeddingsEqualLlamaCpps() {
        compareEmbeddings(m_ref.files.projector, {{128, 96}, {37, 250}, {128, 128}});
    }

    // With deepstack mergers (Qwen3-VL's: the outputs of some layers merged too, side by side
    // after the main merger's, as Qwen3-VL's three): here after layers 0, 1 and 3 of 4, each 64
    // wide, so that the embeddings are the text model's 256 wide and mtmd takes them.
    void qwen3vlDeepstackEmbeddingsEqualLlamaCpps() {
        ProjectorSynthOptions o;
        o.family = "qwen3vl_merger";
        o.patchSize = 16;
        o.merge = 2;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 4;
        o.nHead = 4;
        o.positionSize = 64;
        o.projectionDim = 64; // the main merger's and each deepstack merger's
        o.deepstack = {0, 1, 3};
        o.seed = 7;
        o.outPath = m_ref.path("deepstack-mmproj.gguf").toStdString();
        const Status s = synthesizeProjector(o);
        QVERIFY2(s.isOk(), s.toString().c_str());
        compareEmbeddings(m_ref.path("deepstack-mmproj.gguf"), {{128, 96}});
    }

    // A prompt with an image through llama.cpp (ref_mtmd_logits: its chunks' ids and the last
    // position's logits) and through Hearth's encoder and qwen35-tiny in three steps: the text
    // before, the image's embeddings (seen causally, as mtmd decodes them for Qwen), the text
    // after. M-RoPE's positions as mtmd gives them: the image's tokens all at the temporal
    // position p where it starts, (p + row, p + column) in the height and width sections (rows and
    // columns of merged patches), the text after it from p + max(columns, rows). The last logits
    // agree on every device, with Hearth's embeddings and with llama.cpp's; with the image's
    // tokens at plain sequential positions they do not.
    void qwen35TextLogitsAfterAnImageEqualLlamaCpps() {
        const Image image = picture(128, 96);
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
        const PatchGrid grid = patchGrid((*encoder)->info(), image.width, image.height);
        const int columns = grid.columns / 2, rows = grid.rows / 2;
        QCOMPARE(int64_t(columns) * rows, imageTokens);

        auto file = gguf::File::open(m_ref.files.model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QStringList shape;
        QString error;
        const std::vector<float> theirs = m_ref.embeddings(image, shape, error);
        QVERIFY2(theirs.size() == embeddings->values.size(), qPrintable(error));
        struct Run {
            QString device;
            const std::vector<float>* values;
            bool mrope;
        };
        std::vector<Run> runs;
        for (const QString& device : test::visionDevices()) runs.push_back({device, &embeddings->values, true});
        runs.push_back({QStringLiteral("cpu"), &theirs, true});
        runs.push_back({QStringLiteral("cpu"), &embeddings->values, false});
        for (const Run& r : runs) {
            const bool own = r.values == &embeddings->values;
            test::ImagePrompt prompt;
            prompt.before = texts[0];
            prompt.after = texts[1];
            prompt.embeds = r.values;
            prompt.width = embeddings->width;
            prompt.recurrent = true;
            if (r.mrope) {
                prompt.columns = columns;
                prompt.rows = rows;
            }
            std::vector<float> logits;
            const Status s = test::imagePromptLogits(**arch, r.device.toStdString(), prompt, logits);
            QVERIFY2(s.isOk(), qPrintable(r.device + QStringLiteral(": ") + QString::fromStdString(s.toString())));
            QCOMPARE(logits.size(), want.size());
            const test::LogitsDelta d = test::compareLogits(logits, want);
            qInfo("%s, %s embeddings, %s: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)",
                  qPrintable(r.device), own ? "Hearth's" : "llama.cpp's",
                  r.mrope ? "M-RoPE positions" : "sequential positions", double(d.worst), d.argmax, d.wantArgmax);
            if (!r.mrope) {
                QVERIFY2(d.worst > 1e-2f, "sequential positions give llama.cpp's logits too: the test cannot tell");
                continue;
            }
            QVERIFY2(d.worst < 5e-3f,
                     qPrintable(r.device + QStringLiteral(": max |delta| ") + QString::number(double(d.worst))));
            QCOMPARE(d.argmax, d.wantArgmax);
        }
    }

    // hearth-cli run with --mmproj and --image on qwen35-tiny: the prompt's text ids are mtmd's
    // chunks' (with "<|vision_start|>" and "<|vision_end|>" around the image) and the greedy
    // answer is llama.cpp's, token for token, on the CPU and lavapipe: the engine places the
    // image's tokens and the text after them at mtmd's M-RoPE positions.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        test::checkCliGreedyAboutAnImage(m_ref.files.logitsTool, m_ref.files.model, m_ref.files.projector, picture(128, 96), m_ref.dir.path());
    }
};

QTEST_GUILESS_MAIN(TestQwen3VlVisionReference)
#include "test_qwen3vl_vision_reference.moc"
