// The starter list holds only models that load: for each entry, a random-weight file of its
// `synthPreset` (a real shape of the entry's architecture, cut to one layer) in its
// `quantization` is made with `hearth-cli synth` (once per preset and type: entries sharing them
// share the file), loaded through EngineHost as the app loads a model, and asked for one token. An entry whose architecture or weight type does not load fails.
// Every entry's architecture is also one the hub page would not mark "won't run here".
#include "services/engine_host.h"
#include "services/model_library.h"
#include "services/model_support.h"

#include "test_support.h"

#include <QHash>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth::app;

namespace {

// stories260K's 512-token vocabulary for every entry, Qwen's included: the test is about the
// architecture and the weight type (the layer keeps its real shape), and a small vocabulary keeps
// the token embedding and the output, most of a one-layer file, small to make and to load.
const QString kVocab = QStringLiteral("models/stories260K.gguf");

} // namespace

class TestStarterModels : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QHash<QString, QString> m_made; // "preset quantization" -> the file synthesized for it

private Q_SLOTS:
    void entriesLoad_data() {
        QTest::addColumn<QString>("repo");
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("quantization");
        QString error;
        const QList<StarterModel> list = ModelLibrary::starterModels(QStringLiteral(":/hearth/models/starter.json"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(!list.isEmpty());
        for (const StarterModel& m : list)
            QTest::newRow(qPrintable(m.repo)) << m.repo << m.architecture << m.synthPreset << m.quantization;
    }
    void entriesLoad() {
        QFETCH(QString, repo);
        QFETCH(QString, architecture);
        QFETCH(QString, preset);
        QFETCH(QString, quantization);
        QVERIFY2(!architecture.isEmpty() && !preset.isEmpty(), "each entry names its architecture and synthPreset");
        QCOMPARE(wontRunReason(quantization, architecture), QString());
        HEARTH_REQUIRE_TEST_FILE(kVocab);

        const QString key = preset + QLatin1Char(' ') + quantization;
        QString path = m_made.value(key);
        if (path.isEmpty()) {
            path = m_dir.filePath(preset + QLatin1Char('-') + quantization + QStringLiteral(".gguf"));
            QProcess synth;
            synth.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                        {QStringLiteral("synth"), QStringLiteral("--preset"), preset, QStringLiteral("--type"),
                         quantization, QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--vocab"),
                         QString::fromStdString(hearth::test::testDataPath(kVocab)), QStringLiteral("-o"), path});
            QVERIFY(synth.waitForFinished(120000));
            QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
            m_made.insert(key, path);
        }

        EngineHost host;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        QSignalSpy loadFailed(&host, &EngineHost::loadFailed);
        LoadSettings settings;
        settings.contextLength = 256;
        settings.threads = 2;
        host.loadModel(path, settings);
        for (int i = 0; i < 600 && loaded.isEmpty() && loadFailed.isEmpty(); ++i) loaded.wait(100);
        QVERIFY2(loadFailed.isEmpty(), loadFailed.isEmpty() ? "" : qPrintable(loadFailed.first().first().toString()));
        QCOMPARE(loaded.count(), 1);
        QCOMPARE(host.model().architecture, architecture);

        QSignalSpy finished(&host, &EngineHost::finished);
        QSignalSpy failed(&host, &EngineHost::failed);
        Sampling greedy = Sampling::greedy(1);
        greedy.ignoreEos = true;
        const quint64 id = host.sendTokens({1, 2, 3}, greedy);
        QVERIFY(id != 0);
        for (int i = 0; i < 600 && finished.isEmpty() && failed.isEmpty(); ++i) finished.wait(100);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(1).toString()));
        QCOMPARE(finished.count(), 1);
        QCOMPARE(finished.first().at(2).value<GenerationUsage>().completionTokens, 1);
    }
};

QTEST_GUILESS_MAIN(TestStarterModels)
#include "test_starter_models.moc"
