// EngineHost with the real stories260K model: loading on a worker, greedy text equal to the CLI's,
// every signal delivered on the test's thread, stop, chat, stats, and errors as signals.
#include "services/engine_host.h"

#include "hearth/synth.h"
#include "test_support.h"

#include "hearth/devices.h"

#include <QSemaphore>
#include <QSignalSpy>
#include <QThread>
#include <QtTest>

using namespace hearth::app;

namespace {

QString storiesPath() { return QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")); }

LoadSettings smallSettings() {
    LoadSettings s;
    s.contextLength = 256;
    s.threads = 1;
    s.useMmap = false; // the host's tests read the file into memory; the engine's map it
    return s;
}

bool loadStories(EngineHost& host) {
    QSignalSpy loaded(&host, &EngineHost::loaded);
    QSignalSpy failed(&host, &EngineHost::loadFailed);
    host.loadModel(storiesPath(), smallSettings());
    if (host.state() != EngineHost::State::Loading) return false;
    for (int i = 0; i < 200 && loaded.isEmpty() && failed.isEmpty(); ++i) loaded.wait(100);
    if (!failed.isEmpty()) qWarning() << "load failed:" << failed.first().first().toString();
    return loaded.count() == 1;
}

} // namespace

class TestEngineHost : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void greedyTextArrivesOnCallersThread() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        QVERIFY(host.isLoaded());
        QCOMPARE(host.model().architecture, QStringLiteral("llama"));
        QCOMPARE(host.model().vocabSize, 512);
        QCOMPARE(host.model().layers, 5);
        QCOMPARE(host.model().contextLength, 256);
        QVERIFY(host.model().builtinChatTemplate);

        QString text;
        int pieces = 0;
        bool wrongThread = false;
        QThread* const testThread = QThread::currentThread();
        quint64 id = 0;
        connect(&host, &EngineHost::tokenReceived, this, [&](quint64 rid, const QString& piece) {
            if (QThread::currentThread() != testThread) wrongThread = true;
            if (rid != id) return;
            text += piece;
            ++pieces;
        });
        QSignalSpy finished(&host, &EngineHost::finished);
        QSignalSpy failed(&host, &EngineHost::failed);
        id = host.sendText(QStringLiteral("Once upon a time"), Sampling::greedy(16));
        QVERIFY(id != 0);
        QCOMPARE(host.activeRequests(), QList<quint64>{id});
        QVERIFY(finished.wait(20000));
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().at(1).toString()));
        QVERIFY(!wrongThread);
        QVERIFY2(text.startsWith(QStringLiteral(", there was a little girl named Lily")), qPrintable(text));
        QVERIFY(pieces >= 8);
        QCOMPARE(finished.first().at(0).toULongLong(), id);
        QCOMPARE(finished.first().at(1).toString(), QStringLiteral("length"));
        const auto usage = finished.first().at(2).value<GenerationUsage>();
        QCOMPARE(usage.promptTokens, 5); // <s> Once upon a time
        QCOMPARE(usage.completionTokens, 16);
        QVERIFY(usage.timeToFirstTokenMs >= 0.0);
        QVERIFY(host.activeRequests().isEmpty());

        // The same prompt as token ids gives the same text.
        QString again;
        connect(&host, &EngineHost::tokenReceived, this,
                [&](quint64 rid, const QString& piece) { if (rid != id) again += piece; });
        host.sendTokens({1, 403, 407, 261, 378}, Sampling::greedy(16));
        QVERIFY(finished.wait(20000));
        QCOMPARE(again, text);
    }

    // While a reply streams, the context it fills is counted per token: its prompt and the reply
    // so far, ending where the usage does.
    void contextUsedGrowsPerToken() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        quint64 id = 0;
        QList<int> counted, polled;
        connect(&host, &EngineHost::contextUsedChanged, this, [&](quint64 rid, int tokens) {
            if (rid != id) return;
            counted << tokens;
            polled << host.contextUsed(rid);
        });
        QSignalSpy finished(&host, &EngineHost::finished);
        id = host.sendText(QStringLiteral("Once upon a time"), Sampling::greedy(16));
        QCOMPARE(host.contextUsed(id), 0); // nothing generated yet
        QVERIFY(finished.wait(20000));
        const auto usage = finished.first().at(2).value<GenerationUsage>();
        QCOMPARE(counted.size(), usage.completionTokens);
        QCOMPARE(counted.first(), usage.promptTokens + 1);
        QCOMPARE(counted.last(), usage.promptTokens + usage.completionTokens);
        for (int i = 1; i < counted.size(); ++i) QCOMPARE(counted[i], counted[i - 1] + 1);
        QCOMPARE(polled, counted);
        QCOMPARE(host.contextUsed(id), 0); // ended
    }

    // A prompt longer than a step (batch 16 here) is read over several: promptProgress says how
    // far, for that request, on the caller's thread, before its first token.
    void promptProgressComesBeforeTheFirstToken() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        LoadSettings settings;
        settings.batchSize = 16;
        host.loadModel(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")), settings);
        QVERIFY(loaded.wait(30000));
        quint64 id = 0;
        QList<std::pair<int, int>> progress;
        int tokensBefore = -1; // tokens seen when the last progress came
        int tokens = 0;
        connect(&host, &EngineHost::promptProgress, this, [&](quint64 rid, int done, int total) {
            QVERIFY(QThread::currentThread() == thread());
            if (rid != id) return;
            progress << std::pair{done, total};
            tokensBefore = tokens;
        });
        connect(&host, &EngineHost::tokenReceived, this, [&](quint64 rid, const QString&) {
            if (rid == id) ++tokens;
        });
        QSignalSpy finished(&host, &EngineHost::finished);
        QList<int> prompt;
        for (int i = 0; i < 40; ++i) prompt << 100 + i; // 40 tokens: 16 + 16 + 8
        id = host.sendTokens(prompt, Sampling::greedy(4));
        QVERIFY(finished.wait(20000));
        QCOMPARE(progress, (QList<std::pair<int, int>>{{16, 40}, {32, 40}}));
        QCOMPARE(tokensBefore, 0);
        QVERIFY(tokens > 0);
    }

    void stopEndsWithCancelled() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        Sampling s = Sampling::greedy(200);
        s.ignoreEos = true;
        QSignalSpy tokens(&host, &EngineHost::tokenReceived);
        QSignalSpy finished(&host, &EngineHost::finished);
        const quint64 id = host.sendText(QStringLiteral("Once upon a time"), s);
        QVERIFY(tokens.wait(20000));
        host.stop(id);
        QVERIFY(finished.wait(20000));
        QCOMPARE(finished.first().at(0).toULongLong(), id);
        const QString reason = finished.first().at(1).toString();
        // Generation may already have ended before the stop arrived on a fast machine.
        QVERIFY2(reason == QStringLiteral("cancelled") || reason == QStringLiteral("length"), qPrintable(reason));
        if (reason == QStringLiteral("cancelled"))
            QVERIFY(finished.first().at(2).value<GenerationUsage>().completionTokens < 200);
    }

    // Stop works while the worker (or the engine's step) is held up: the reply ends for the
    // user at the grace's end, and the request is dropped once the worker gets to it.
    void stopEndsAReplyTheWorkerHoldsUp() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        host.setStopGraceMs(200);
        auto* worker = host.findChild<QThread*>();
        QVERIFY(worker);
        QSemaphore release;
        auto* blocker = new QObject; // lives on the worker, which deletes it once unblocked
        blocker->moveToThread(worker);
        QMetaObject::invokeMethod(
            blocker, [blocker, &release] { release.acquire(); blocker->deleteLater(); }, Qt::QueuedConnection);
        Sampling s = Sampling::greedy(200);
        s.ignoreEos = true;
        QSignalSpy tokens(&host, &EngineHost::tokenReceived);
        QSignalSpy finished(&host, &EngineHost::finished);
        const quint64 id = host.sendText(QStringLiteral("Once upon a time"), s);
        QTest::qWait(100);
        host.stop(id);
        QVERIFY(finished.wait(5000));
        QCOMPARE(finished.size(), 1);
        QCOMPARE(finished.first().at(0).toULongLong(), id);
        QCOMPARE(finished.first().at(1).toString(), QStringLiteral("cancelled"));
        QVERIFY(host.activeRequests().isEmpty());
        release.release();
        // The worker submits and then cancels it: nothing more reaches the user.
        QTest::qWait(500);
        QCOMPARE(finished.size(), 1);
        QVERIFY(tokens.isEmpty());
    }

    void chatUsesTheTemplate() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        QSignalSpy finished(&host, &EngineHost::finished);
        QSignalSpy failed(&host, &EngineHost::failed);
        host.sendChat({{QStringLiteral("system"), QStringLiteral("Tell stories.")},
                       {QStringLiteral("user"), QStringLiteral("Once upon a time")}},
                      Sampling::greedy(8));
        QVERIFY(finished.wait(20000));
        QVERIFY(failed.isEmpty());
        const auto usage = finished.first().at(2).value<GenerationUsage>();
        QVERIFY2(usage.promptTokens > 10, qPrintable(QString::number(usage.promptTokens))); // ChatML markup
        QVERIFY(usage.completionTokens >= 1);
    }

    // stories260K's ChatML reply holds no <think>: all of it is answer, none reasoning. An earlier
    // reply's reasoning is not part of its content, so ChatML (which has no place for it) leaves
    // the prompt as it was without it; put into the content, it would lengthen the prompt.
    void chatReasoningStaysApart() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        QSignalSpy finished(&host, &EngineHost::finished);
        QSignalSpy failed(&host, &EngineHost::failed);
        QSignalSpy reasoning(&host, &EngineHost::reasoningReceived);
        QString answer;
        connect(&host, &EngineHost::tokenReceived, this, [&](quint64, const QString& piece) { answer += piece; });
        const QString thoughts = QStringLiteral("The girl wants a story about a dog and a ball in the park.");
        auto promptTokens = [&](const QString& content, const QString& reasoningText) {
            finished.clear();
            host.sendChat({{QStringLiteral("user"), QStringLiteral("Once upon a time")},
                           {QStringLiteral("assistant"), content, reasoningText},
                           {QStringLiteral("user"), QStringLiteral("Tell me more")}},
                          Sampling::greedy(8));
            if (!finished.wait(20000)) return -1;
            return finished.first().at(2).value<GenerationUsage>().promptTokens;
        };
        const int without = promptTokens(QStringLiteral("there was a girl."), QString());
        QVERIFY(failed.isEmpty());
        QVERIFY(without > 10);
        QVERIFY(!answer.isEmpty());
        QVERIFY(reasoning.isEmpty());
        QCOMPARE(promptTokens(QStringLiteral("there was a girl."), thoughts), without);
        const int inlined = promptTokens(QStringLiteral("<think>") + thoughts + QStringLiteral("</think>there was a girl."),
                                         QString());
        QVERIFY2(inlined > without + 10, qPrintable(QStringLiteral("%1 vs %2").arg(inlined).arg(without)));
        QVERIFY(reasoning.isEmpty());
    }

    void statsArrivePeriodically() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        host.setStatsInterval(20);
        QSignalSpy stats(&host, &EngineHost::statsUpdated);
        QVERIFY(loadStories(host));
        QVERIFY(stats.wait(5000));
        QVERIFY(stats.wait(5000));
        const auto snap = stats.last().first().value<EngineStatsSnapshot>();
        QVERIFY(snap.kvBlocksTotal > 0);
        host.setStatsInterval(0);
        stats.clear();
        QTest::qWait(100);
        QVERIFY(stats.size() <= 1); // one poll may have been in flight
    }

    void errorsComeAsSignals() {
        EngineHost host;
        QSignalSpy failed(&host, &EngineHost::failed);
        const quint64 id = host.sendText(QStringLiteral("hello"), Sampling::greedy(4));
        QVERIFY(failed.wait(5000));
        QCOMPARE(failed.first().at(0).toULongLong(), id);
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("no model")));

        QSignalSpy loadFailed(&host, &EngineHost::loadFailed);
        host.loadModel(QStringLiteral("/nonexistent/model.gguf"), smallSettings());
        QVERIFY(loadFailed.wait(5000));
        QVERIFY(!loadFailed.first().first().toString().isEmpty());
        QCOMPARE(host.state(), EngineHost::State::Empty);

        LoadSettings bad = smallSettings();
        bad.kvType = QStringLiteral("q3_weird");
        host.loadModel(storiesPath(), bad);
        QVERIFY(loadFailed.wait(5000));
        QVERIFY(loadFailed.last().first().toString().contains(QStringLiteral("q3_weird")));
    }

    // A draft model that can draft is loaded beside the model; one of another vocabulary is left
    // out with the reason, and the model still loads.
    void draftModelLoadsOrIsLeftOutWithTheReason() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        HEARTH_REQUIRE_TEST_FILE("models/llama-2-tiny-random.gguf");
        EngineHost host;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        LoadSettings s = smallSettings();
        s.draftModel = storiesPath();
        host.loadModel(storiesPath(), s);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
        LoadedModel m = loaded.last().first().value<LoadedModel>();
        QCOMPARE(m.draftModel, QStringLiteral("stories260K.gguf"));
        QVERIFY(m.draftNote.isEmpty());

        s.draftModel = QString::fromStdString(hearth::test::testDataPath("models/llama-2-tiny-random.gguf"));
        host.loadModel(storiesPath(), s);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 2, 20000);
        m = loaded.last().first().value<LoadedModel>();
        QVERIFY(m.draftModel.isEmpty());
        QVERIFY2(m.draftNote.contains(QStringLiteral("vocabulary")), qPrintable(m.draftNote));
        QCOMPARE(host.state(), EngineHost::State::Ready);
    }

    // The model's own path as the draft: a model with a multi-token-prediction head loads with it
    // drafting (named so in LoadedModel::draftModel).
    void ownHeadDraftsWhenTheModelHasOne() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        hearth::SynthOptions o;
        o.preset = "qwen35-tiny";
        o.typeOrMix = "Q8_0";
        o.vocabPath = storiesPath().toStdString(); // its 512-token vocabulary
        o.outPath = dir.filePath(QStringLiteral("qwen35-tiny.gguf")).toStdString();
        QVERIFY(hearth::synthesizeModel(o).isOk());
        const QString model = QString::fromStdString(o.outPath);
        EngineHost host;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        QSignalSpy failed(&host, &EngineHost::loadFailed);
        LoadSettings s = smallSettings();
        s.draftModel = model;
        host.loadModel(model, s);
        QTRY_VERIFY_WITH_TIMEOUT(loaded.count() + failed.count() > 0, 20000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.last().first().toString()));
        const LoadedModel m = loaded.last().first().value<LoadedModel>();
        QVERIFY2(m.draftModel.contains(QStringLiteral("multi-token prediction")), qPrintable(m.draftModel));
        QVERIFY(m.draftNote.isEmpty());
    }

    void badTokensAndLongPromptsFail() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        QSignalSpy failed(&host, &EngineHost::failed);
        host.sendTokens({1, 99999}, Sampling::greedy(4));
        QVERIFY(failed.wait(5000));
        QVERIFY(failed.first().at(1).toString().contains(QStringLiteral("vocabulary")));
        QList<int> tooLong(300, 261);
        host.sendTokens(tooLong, Sampling::greedy(4));
        QVERIFY(failed.wait(5000));
        QVERIFY(failed.last().at(1).toString().contains(QStringLiteral("context")));
    }

    void unloadAndDestroyWhileGenerating() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        {
            EngineHost host;
            QVERIFY(loadStories(host));
            Sampling s = Sampling::greedy(200);
            s.ignoreEos = true;
            QSignalSpy finished(&host, &EngineHost::finished);
            QSignalSpy unloaded(&host, &EngineHost::unloaded);
            const quint64 id = host.sendText(QStringLiteral("Once upon a time"), s);
            host.unloadModel();
            QCOMPARE(finished.count(), 1); // ended at once, as cancelled
            QCOMPARE(finished.first().at(0).toULongLong(), id);
            QCOMPARE(finished.first().at(1).toString(), QStringLiteral("cancelled"));
            QCOMPARE(unloaded.count(), 1);
            QCOMPARE(host.state(), EngineHost::State::Empty);
            QTest::qWait(50);
            QCOMPARE(finished.count(), 1); // nothing more for it
        }
        {
            EngineHost host;
            QVERIFY(loadStories(host));
            Sampling s = Sampling::greedy(200);
            s.ignoreEos = true;
            host.sendText(QStringLiteral("Once upon a time"), s);
            host.sendText(QStringLiteral("Once upon a time"), s);
            QTest::qWait(5);
        } // destroyed mid-generation: no crash, no late signal
    }

    void laterLoadSupersedesEarlier() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QSignalSpy loaded(&host, &EngineHost::loaded);
        host.loadModel(storiesPath(), smallSettings());
        LoadSettings second = smallSettings();
        second.contextLength = 128;
        host.loadModel(storiesPath(), second);
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 20000);
        QTest::qWait(50);
        QCOMPARE(loaded.count(), 1);
        QCOMPARE(host.model().contextLength, 128);
    }

    // A GPU choice runs there (as many layers as fit: all of this small model) and gives the
    // CPU's greedy text; a device that is not there runs on the CPU with the reason shown.
    void gpuDeviceOrAReason() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        const hearth::DeviceList devices = hearth::listDevices();
        auto greedy = [](EngineHost& host) {
            QString text;
            QObject::connect(&host, &EngineHost::tokenReceived, &host,
                             [&text](quint64, const QString& piece) { text += piece; });
            QSignalSpy finished(&host, &EngineHost::finished);
            host.sendText(QStringLiteral("Once upon a time"), Sampling::greedy(16));
            if (!finished.wait(60000)) return QStringLiteral("(no reply)");
            return text;
        };
        for (const QString& id : {QStringLiteral("vulkan:0"), QStringLiteral("vulkan:9")}) {
            EngineHost host;
            LoadSettings s = smallSettings();
            s.device = id;
            s.gpuLayers = -1;
            QSignalSpy loaded(&host, &EngineHost::loaded);
            host.loadModel(storiesPath(), s);
            QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
            if (hearth::findDevice(devices, id.toStdString())) {
                QCOMPARE(host.model().device, id);
                QCOMPARE(host.model().gpuLayers, 5);
                QVERIFY2(host.model().fallbackReason.isEmpty(), qPrintable(host.model().fallbackReason));
            } else {
                QCOMPARE(host.model().device, QStringLiteral("cpu"));
                QCOMPARE(host.model().gpuLayers, 0);
                QVERIFY2(host.model().fallbackReason.contains(id + QStringLiteral(" was not found")),
                         qPrintable(host.model().fallbackReason));
            }
            const QString text = greedy(host);
            QVERIFY2(text.startsWith(QStringLiteral(", there was a little girl named Lily")), qPrintable(text));
        }
    }

    // A load reports its stages as it goes, in order, rising, before loaded().
    void loadReportsStages() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QStringList stages;
        QList<double> fractions;
        bool afterLoaded = false, loadedSeen = false;
        connect(&host, &EngineHost::loadProgress, this, [&](const QString& stage, double f) {
            if (loadedSeen) afterLoaded = true;
            stages << stage;
            fractions << f;
        });
        connect(&host, &EngineHost::loaded, this, [&] { loadedSeen = true; });
        QVERIFY(loadStories(host));
        QVERIFY2(stages.size() >= 4, qPrintable(stages.join(QStringLiteral(" | "))));
        QCOMPARE(stages.first(), QStringLiteral("Reading the model file"));
        QVERIFY(stages.contains(QStringLiteral("Preparing the weights on cpu")));
        for (int i = 1; i < fractions.size(); ++i) QVERIFY(fractions[i] > fractions[i - 1]);
        QVERIFY(fractions.last() <= 1.0);
        QVERIFY(!afterLoaded);
    }

    // The idle timer unloads a model nothing uses; a running request or a hold keeps it.
    void idleUnloadAfterQuiet() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        EngineHost host;
        QVERIFY(loadStories(host));
        QSignalSpy idle(&host, &EngineHost::idleUnloaded);
        QSignalSpy unloaded(&host, &EngineHost::unloaded);
        host.setHeld(true);
        host.setIdleUnloadMs(150);
        QVERIFY(!idle.wait(600)); // held: stays
        QVERIFY(host.isLoaded());
        host.setHeld(false);
        // A request in flight keeps it loaded past the idle time; the clock restarts after it.
        Sampling slow = Sampling::greedy(200);
        slow.ignoreEos = true;
        QSignalSpy finished(&host, &EngineHost::finished);
        const quint64 id = host.sendText(QStringLiteral("Once upon a time"), slow);
        QVERIFY(id != 0);
        QVERIFY(finished.wait(20000));
        QVERIFY(host.isLoaded());
        QVERIFY(idle.isEmpty());
        QVERIFY(idle.wait(3000));
        QCOMPARE(unloaded.count(), 1);
        QVERIFY(!host.isLoaded());
        QCOMPARE(host.state(), EngineHost::State::Empty);
    }
};

QTEST_GUILESS_MAIN(TestEngineHost)
#include "test_engine_host.moc"
