// DraftModelFinder on real files: only smaller files of the same vocabulary are offered, the
// answer arrives on the caller's thread, and a later request supersedes an earlier one.
#include "services/draft_finder.h"

#include "hearth/engine.h"
#include "hearth/synth.h"
#include "test_support.h"
#include "tiny_vocab.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;

namespace {

QString finderDataFile(const char* name) { return QString::fromStdString(hearth::test::testDataPath(name)); }

// stories260K with 1 MiB of zeros after its data: the same model in a larger file, so that the
// real stories260K is a smaller file of the same vocabulary.
QString finderLargerStories(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("stories-large.gguf"));
    QFile in(finderDataFile("models/stories260K.gguf")), out(path);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly)) return {};
    out.write(in.readAll());
    out.write(QByteArray(1 << 20, '\0'));
    return path;
}

} // namespace

class TestDraftFinder : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void offersSmallerFilesOfTheSameVocabulary() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        HEARTH_REQUIRE_TEST_FILE("models/llama-2-tiny-random.gguf");
        QTemporaryDir dir;
        const QString model = finderLargerStories(dir);
        QVERIFY(!model.isEmpty());
        const QString stories = finderDataFile("models/stories260K.gguf");
        const QString other = finderDataFile("models/llama-2-tiny-random.gguf"); // another vocabulary
        const QStringList candidates = {other, model, dir.filePath(QStringLiteral("gone.gguf")), stories};
        QCOMPARE(DraftModelFinder::compatible(model, candidates), QStringList{stories});
        // The smaller file cannot be drafted for by the larger one.
        QCOMPARE(DraftModelFinder::compatible(stories, {model}), QStringList{});
        QCOMPARE(DraftModelFinder::compatible(dir.filePath(QStringLiteral("gone.gguf")), {stories}), QStringList{});

        DraftModelFinder finder;
        QSignalSpy found(&finder, &DraftModelFinder::found);
        finder.find(stories, candidates); // superseded by the next request
        finder.find(model, candidates);
        QTRY_COMPARE_WITH_TIMEOUT(found.count(), 1, 20000);
        QTest::qWait(200); // no late answer for the first request
        QCOMPARE(found.count(), 1);
        QCOMPARE(found.first().at(0).toString(), model);
        QCOMPARE(found.first().at(1).toStringList(), QStringList{stories});
    }

    // A model with a multi-token-prediction head is offered first itself (its own drafter); one
    // without is not.
    void offersTheModelsOwnHead() {
        QTemporaryDir dir;
        const std::string vocab = dir.filePath(QStringLiteral("vocab.gguf")).toStdString();
        QVERIFY(hearth::test::writeTinyVocab(vocab).isOk());
        hearth::SynthOptions o;
        o.preset = "qwen35-tiny";
        o.typeOrMix = "Q8_0";
        o.vocabPath = vocab;
        o.outPath = dir.filePath(QStringLiteral("qwen35-tiny.gguf")).toStdString();
        QVERIFY(hearth::synthesizeModel(o).isOk());
        const QString model = QString::fromStdString(o.outPath);
        QCOMPARE(DraftModelFinder::compatible(model, {model}), QStringList{model});
        QVERIFY(hearth::checkMtpHead(o.outPath).isOk());
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        const QString stories = finderDataFile("models/stories260K.gguf");
        QVERIFY(!hearth::checkMtpHead(stories.toStdString()).isOk());
        QCOMPARE(DraftModelFinder::compatible(stories, {stories}), QStringList{});
    }

    // Destroyed with a check queued or running: it waits for the thread, and nothing is answered.
    void destroyedWhileChecking() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        const QString model = finderLargerStories(dir);
        auto* finder = new DraftModelFinder();
        for (int i = 0; i < 5; ++i) finder->find(model, {finderDataFile("models/stories260K.gguf")});
        delete finder;
        QCoreApplication::processEvents();
    }
};

QTEST_GUILESS_MAIN(TestDraftFinder)
#include "test_draft_finder.moc"
