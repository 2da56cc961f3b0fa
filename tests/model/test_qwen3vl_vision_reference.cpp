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

class TestQwen3VlVisionReference : public QObject {
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
    std::vector<float> referenceEmbeddings(const Image& image, QStringList& shape, QString& error,
                                           const QString& model = {}, const QString& projector = {}) {
        const QString rgb = writeRgb(image, "picture.rgb"), out = path("picture.f32");
        QProcess run;
        run.start(m_embedTool, {model.isEmpty() ? m_model : model, projector.isEmpty() ? m_projector : projector, rgb,
                                QString::number(image.width), QString::number(image.height), out});
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

    // Hearth's embeddings of each picture against mtmd's on every device; the worst difference.
    void compareEmbeddings(const QString& projector, const std::vector<std::pair<int, int>>& sizes) {
        const QStringList names = devices();
        for (const QString& d : names) {
            auto enc = VisionEncoder::open(projector.toStdString(), VisionOptions{d.toStdString(), 2});
            QVERIFY2(enc.isOk(), qPrintable(d + ": " + QString::fromStdString(enc.status().toString())));
            for (auto [w, h] : sizes) {
                const Image image = picture(w, h);
                QStringList shape;
                QString error;
                const std::vector<float> want = referenceEmbeddings(image, shape, error, m_model, projector);
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
        m_model = path("qwen35-tiny.gguf");
        m_projector = path("qwen35-tiny-mmproj.gguf");
        QProcess synth;
        synth.start(test::binDir() + QStringLiteral("/hearth-cli"),
                    {QStringLiteral("synth"), QStringLiteral("--preset"), QStringLiteral("qwen35-tiny"),
                     QStringLiteral("--type"), QStringLiteral("F32"), QStringLiteral("--vocab"),
                     QString::fromStdString(test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"))),
                     QStringLiteral("-o"), m_model, QStringLiteral("--mmproj"), m_projector});
        QVERIFY(synth.waitForFinished(300000));
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().right(2000).constData());
    }

    // mtmd loads the projector beside the model; each picture's embeddings are as many as the
    // patch grid Hearth chooses gives (below the budget's least, within it, square), as wide as
    // the model.
    void qwen3vlTokenCountsEqualLlamaCpps() {
        auto info = readProjector(m_projector.toStdString());
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->type, std::string("qwen3vl_merger"));
        QCOMPARE(info->merge, 2);
        QVERIFY2(checkProjectorFor(*info, m_model.toStdString()).isOk(), "the projector does not fit the model");
        for (auto [w, h] : {std::pair{40, 30}, std::pair{37, 250}, std::pair{128, 96}, std::pair{1024, 768}}) {
            const Image image = picture(w, h);
            QStringList shape;
            QString error;
            const std::vector<float> e = referenceEmbeddings(image, shape, error);
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
        o.outPath = path("gemma3-mmproj.gguf").toStdString();
        QVERIFY2(synthesizeProjector(o).isOk(), "the Gemma 3 projector was not written");
        auto info = readProjector(o.outPath);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        const Status s = checkProjectorFor(*info, m_model.toStdString());
        QCOMPARE(s.code(), ErrorCode::InvalidArgument);
        QVERIFY2(s.message().find("another model") != std::string::npos &&
                     s.message().find("qwen3vl_merger") != std::string::npos,
                 s.toString().c_str());
    }

    // Hearth's preprocessing (the grid, Pillow's bicubic resize, the black padding, the mean and
    // deviation of 0.5) is mtmd's value for value (ref_mtmd_preprocess).
    void qwen3vlPreprocessingEqualsLlamaCpps() {
        auto enc = VisionEncoder::open(m_projector.toStdString(), VisionOptions{"cpu", 1});
        QVERIFY2(enc.isOk(), enc.status().toString().c_str());
        const int P = (*enc)->info().patchSize;
        const QString tool = QFileInfo(m_embedTool).dir().filePath(QStringLiteral("ref_mtmd_preprocess"));
        for (auto [w, h] : {std::pair{40, 30}, std::pair{37, 250}, std::pair{128, 96}}) {
            const Image image = picture(w, h);
            const QString rgb = writeRgb(image, "pre.rgb"), out = path("pre.f32");
            QProcess run;
            run.start(tool, {m_projector, rgb, QString::number(w), QString::number(h), out});
            QVERIFY(run.waitForFinished(300000));
            QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
            const QStringList size = QString::fromUtf8(run.readAllStandardOutput()).trimmed().split(' ');
            QCOMPARE(size.size(), 2);
            const int W = size[0].toInt(), H = size[1].toInt();
            const PatchGrid grid = patchGrid((*enc)->info(), w, h);
            QCOMPARE(W, grid.columns * P);
            QCOMPARE(H, grid.rows * P);
            const std::vector<float> want = readFloats(out); // [H][W][3]
            QCOMPARE(want.size(), size_t(W) * size_t(H) * 3);
            auto got = (*enc)->patches(image);
            QVERIFY2(got.isOk(), got.status().toString().c_str());
            QCOMPARE(got->size(), want.size());
            size_t k = 0, differ = 0;
            for (int py = 0; py < grid.rows; ++py)
                for (int px = 0; px < grid.columns; ++px)
                    for (int c = 0; c < 3; ++c)
                        for (int y = 0; y < P; ++y)
                            for (int x = 0; x < P; ++x, ++k)
                                if ((*got)[k] != want[(size_t(py * P + y) * size_t(W) + size_t(px * P + x)) * 3 + size_t(c)])
                                    ++differ;
            qInfo("%dx%d: %d x %d pixels, %zu of %zu values differ", w, h, W, H, differ, want.size());
            QCOMPARE(differ, size_t(0));
        }
    }

    // Hearth's encoder against mtmd's on the reference, the CPU and lavapipe: a 4:3 picture
    // (1024 x 768 scaled down: 16 x 12 patches, the 8 x 8 position table interpolated), a tall
    // one scaled up to the budget's least, and a square one on the table's own grid.
    void qwen3vlEmbeddingsEqualLlamaCpps() {
        compareEmbeddings(m_projector, {{128, 96}, {37, 250}, {128, 128}});
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
        o.outPath = path("deepstack-mmproj.gguf").toStdString();
        const Status s = synthesizeProjector(o);
        QVERIFY2(s.isOk(), s.toString().c_str());
        compareEmbeddings(path("deepstack-mmproj.gguf"), {{128, 96}});
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
        const QString rgb = writeRgb(image, "prompt.rgb"), out = path("prompt.f32");
        QProcess run;
        run.start(m_logitsTool, {m_model, m_projector, rgb, QString::number(image.width),
                                 QString::number(image.height), QStringLiteral("Look: <__media__> What is it?"), out});
        QVERIFY(run.waitForFinished(300000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
        std::vector<std::vector<int32_t>> texts;
        int64_t imageTokens = 0;
        for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
            const QStringList w = line.split(' ', Qt::SkipEmptyParts);
            if (w[0] == QStringLiteral("text")) {
                texts.emplace_back();
                for (int i = 1; i < w.size(); ++i) texts.back().push_back(w[i].toInt());
            } else if (w[0] == QStringLiteral("image")) {
                imageTokens = w[1].toLongLong();
            }
        }
        QCOMPARE(texts.size(), size_t(2));
        const std::vector<float> want = readFloats(out);
        auto encoder = VisionEncoder::open(m_projector.toStdString(), VisionOptions{"cpu", 2});
        QVERIFY2(encoder.isOk(), encoder.status().toString().c_str());
        auto embeddings = (*encoder)->encode(image);
        QVERIFY2(embeddings.isOk(), embeddings.status().toString().c_str());
        QCOMPARE(embeddings->tokens, imageTokens);
        const PatchGrid grid = patchGrid((*encoder)->info(), image.width, image.height);
        const int columns = grid.columns / 2, rows = grid.rows / 2;
        QCOMPARE(int64_t(columns) * rows, imageTokens);

        auto file = gguf::File::open(m_model.toStdString());
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QStringList shape;
        QString error;
        const std::vector<float> theirs = referenceEmbeddings(image, shape, error);
        QVERIFY2(theirs.size() == embeddings->values.size(), qPrintable(error));
        struct Run {
            QString device;
            const std::vector<float>* values;
            bool mrope;
        };
        std::vector<Run> runs;
        for (const QString& device : devices()) runs.push_back({device, &embeddings->values, true});
        runs.push_back({QStringLiteral("cpu"), &theirs, true});
        runs.push_back({QStringLiteral("cpu"), &embeddings->values, false});
        for (const Run& r : runs) {
            const bool own = r.values == &embeddings->values;
            runtime::RunnerConfig rc;
            rc.device = r.device.toStdString();
            rc.numBlocks = 8;
            rc.stateSlots = 1;
            auto runner = runtime::ModelRunner::create(**arch, rc);
            QVERIFY2(runner.isOk(), runner.status().toString().c_str());
            const std::vector<int32_t> table{0, 1, 2, 3, 4, 5, 6, 7};
            int32_t pos = 0, ropePos = 0;
            std::vector<float> logits;
            auto step = [&](const std::vector<int32_t>& ids, const std::vector<float>* embeds, bool last) {
                graph::Batch b;
                b.blockTables.push_back(table);
                b.states.push_back({pos == 0 ? -1 : 0, 0, {}});
                for (size_t i = 0; i < ids.size(); ++i) {
                    graph::BatchToken t;
                    t.token = ids[i];
                    t.pos = pos++;
                    t.wantLogits = last && i + 1 == ids.size();
                    if (embeds) {
                        t.embed = int32_t(i);
                        if (r.mrope) {
                            t.ropePos = ropePos;
                            t.gridX = int32_t(i) % columns;
                            t.gridY = int32_t(i) / columns;
                        }
                    } else if (r.mrope) {
                        t.ropePos = ropePos++;
                    }
                    b.tokens.push_back(t);
                }
                if (embeds) {
                    b.embeds = *embeds;
                    b.embedWidth = embeddings->width;
                    ropePos += std::max(columns, rows);
                }
                return (*runner)->forward(b, logits);
            };
            Status s = step(texts[0], nullptr, false);
            QVERIFY2(s.isOk(), s.toString().c_str());
            // Placeholder ids other than 0, as the engine's (a hash of the image's pixels).
            std::vector<int32_t> holders(static_cast<size_t>(imageTokens));
            for (size_t i = 0; i < holders.size(); ++i) holders[i] = int32_t(1000 + 7 * i);
            s = step(holders, r.values, false);
            QVERIFY2(s.isOk(), s.toString().c_str());
            s = step(texts[1], nullptr, true);
            QVERIFY2(s.isOk(), s.toString().c_str());
            QCOMPARE(logits.size(), want.size());
            float worst = 0.0f;
            size_t argmax = 0, wantArgmax = 0;
            for (size_t i = 0; i < want.size(); ++i) {
                worst = std::max(worst, std::fabs(logits[i] - want[i]));
                if (logits[i] > logits[argmax]) argmax = i;
                if (want[i] > want[wantArgmax]) wantArgmax = i;
            }
            qInfo("%s, %s embeddings, %s: logits after the image, max |delta| %.3g, argmax %zu (llama.cpp %zu)",
                  qPrintable(r.device), own ? "Hearth's" : "llama.cpp's",
                  r.mrope ? "M-RoPE positions" : "sequential positions", double(worst), argmax, wantArgmax);
            if (!r.mrope) {
                QVERIFY2(worst > 1e-2f, "sequential positions give llama.cpp's logits too: the test cannot tell");
                continue;
            }
            QVERIFY2(worst < 5e-3f, qPrintable(r.device + QStringLiteral(": max |delta| ") + QString::number(double(worst))));
            QCOMPARE(argmax, wantArgmax);
        }
    }

    // hearth-cli run with --mmproj and --image on qwen35-tiny: the prompt's text ids are mtmd's
    // chunks' (with "<|vision_start|>" and "<|vision_end|>" around the image) and the greedy
    // answer is llama.cpp's, token for token, on the CPU and lavapipe: the engine places the
    // image's tokens and the text after them at mtmd's M-RoPE positions.
    void cliRunGivesLlamaCppsGreedyAnswerAboutAnImage() {
        const Image image = picture(128, 96);
        const QString rgb = writeRgb(image, "run.rgb"), out = path("run.f32"), png = path("run.png");
        QImage q(reinterpret_cast<const uchar*>(image.rgb.data()), image.width, image.height, image.width * 3,
                 QImage::Format_RGB888);
        QVERIFY(q.save(png, "PNG"));
        const QString prompt = QStringLiteral("Look: <__media__> What is it?");
        QProcess ref;
        ref.start(m_logitsTool, {m_model, m_projector, rgb, QString::number(image.width),
                                 QString::number(image.height), prompt, out, QStringLiteral("8")});
        QVERIFY(ref.waitForFinished(300000));
        QVERIFY2(ref.exitCode() == 0, ref.readAllStandardError().right(3000).constData());
        QStringList textIds, greedy;
        int64_t imageTokens = 0, before = -1;
        for (const QString& line : QString::fromUtf8(ref.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
            QStringList w = line.split(' ', Qt::SkipEmptyParts);
            const QString kind = w.takeFirst();
            if (kind == QStringLiteral("text")) textIds << w;
            if (kind == QStringLiteral("image")) {
                imageTokens = w[0].toLongLong();
                before = textIds.size();
            }
            if (kind == QStringLiteral("greedy")) greedy = w;
        }
        QCOMPARE(greedy.size(), 8);
        QStringList names{QStringLiteral("cpu")};
        if (findDevice(listDevices(), "vulkan:0")) names << QStringLiteral("vulkan:0");
        for (const QString& device : names) {
            QProcess run;
            run.start(test::binDir() + QStringLiteral("/hearth-cli"),
                      {QStringLiteral("run"), m_model, QStringLiteral("--mmproj"), m_projector, QStringLiteral("--image"),
                       png, QStringLiteral("-p"), prompt, QStringLiteral("--temp"), QStringLiteral("0"),
                       QStringLiteral("-n"), QStringLiteral("8"), QStringLiteral("--print-ids"),
                       QStringLiteral("--device"), device, QStringLiteral("--threads"), QStringLiteral("2")});
            QVERIFY(run.waitForFinished(300000));
            QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
            QStringList promptIds, generated;
            for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n')) {
                if (line.startsWith(QStringLiteral("prompt ids: "))) promptIds = line.mid(12).split(' ', Qt::SkipEmptyParts);
                if (line.startsWith(QStringLiteral("generated ids: ")))
                    generated = line.mid(15).split(' ', Qt::SkipEmptyParts);
            }
            QCOMPARE(promptIds.size(), textIds.size() + int(imageTokens));
            QVERIFY(before > 0);
            const QStringList text = promptIds.mid(0, int(before)) + promptIds.mid(int(before + imageTokens));
            QCOMPARE(text, textIds);
            qInfo("%s: greedy %s (llama.cpp %s)", qPrintable(device), qPrintable(generated.join(' ')),
                  qPrintable(greedy.join(' ')));
            QCOMPARE(generated, greedy);
        }
    }
};

QTEST_GUILESS_MAIN(TestQwen3VlVisionReference)
#include "test_qwen3vl_vision_reference.moc"
