// The models page, offscreen, against a stand-in hub: files this build cannot run (an
// unsupported architecture from the hub's GGUF metadata) stay listed, greyed and marked "won't
// run here" with the reason, and Download is off for them; the others (IQ1_S included, since it
// dequantizes) keep their fit badge and can be downloaded. Fit badges (library and Discover) come
// from the settings page's estimate for the load settings and devices; Delete says whether the
// file goes and does exactly that; hub errors stay on the page with Retry; the starter list shows
// size, license and notes; a download queue left by an earlier run is listed again; a vision
// repository's projector comes with the model, or later through the library's offer.
#include "chat_steps.h"
#include "model_card_delegate.h"
#include "models_view.h"
#include "settings_view.h"
#include "test_support.h"

#include "../app/test_hub.h"

#include "services/download_manager.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/model_library.h"
#include "services/model_list_model.h"
#include "services/settings.h"

#include "services/download_queue_store.h"

#include <QApplication>
#include <QCheckBox>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <QtTest>

using namespace hearth;
using hearth::test::TestHub;

namespace {

constexpr qint64 kGiB = qint64(1) << 30;

DeviceList machineWithGpu(uint64_t gpuFree) {
    DeviceList list;
    DeviceDescription cpu;
    cpu.id = "cpu";
    cpu.name = "Test CPU";
    cpu.totalMemory = uint64_t(16) << 30;
    DeviceDescription gpu;
    gpu.kind = DeviceKind::Vulkan;
    gpu.id = "vulkan:0";
    gpu.name = "Test GPU";
    gpu.type = "discrete";
    gpu.freeMemory = gpuFree;
    gpu.totalMemory = gpuFree;
    list.devices = {cpu, gpu};
    return list;
}

void useDevice(app::Settings& settings, const QString& device) {
    app::LoadSettings ls = settings.loadSettings();
    ls.device = device;
    ls.gpuLayers = -1;
    settings.setLoadSettings(ls);
}

// Answers the next message box with `button` and returns its text (via *text) once it showed.
void answerNextBox(QMessageBox::StandardButton button, QString* text) {
    auto* timer = new QTimer(qApp);
    timer->setInterval(20);
    QObject::connect(timer, &QTimer::timeout, timer, [timer, button, text] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box) return;
        *text = box->text();
        timer->stop();
        timer->deleteLater();
        box->button(button)->click();
    });
    timer->start();
}

bool copyFile(const QString& from, const QString& to) {
    QDir().mkpath(QFileInfo(to).absolutePath());
    return QFile::copy(from, to);
}

// A queue file in `folder` left by an earlier run: one paused download of x-Q4_K_M.gguf from a
// loopback port nothing listens on.
bool writePausedDownload(const QString& folder) {
    app::QueuedDownload d;
    d.request.url = QUrl(QStringLiteral("http://127.0.0.1:9/acme/x/resolve/main/x-Q4_K_M.gguf"));
    d.request.destination = QDir(folder).filePath(QStringLiteral("x-Q4_K_M.gguf"));
    d.request.expectedSize = 1000;
    d.request.displayName = QStringLiteral("x-Q4_K_M.gguf");
    d.paused = true;
    return app::writeDownloadQueue(QDir(folder).filePath(QStringLiteral(".hearth-downloads.json")), {d});
}

} // namespace

class TestModelsView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void marksFilesThatWontRunHere() {
        TestHub hub;
        for (const char* quant : {"Q4_K_M", "IQ1_S"})
            hub.addFile("acme/tiny-GGUF", std::string("tiny-") + quant + ".gguf", {TestHub::makeContent(4096), {}, {}});
        hub.setArchitecture("acme/tiny-GGUF", "qwen2");
        hub.addFile("acme/mamba-GGUF", "mamba-Q4_K_M.gguf", {TestHub::makeContent(4096), {}, {}});
        hub.setArchitecture("acme/mamba-GGUF", "mamba");

        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        app::EngineHost engine;
        app::HubClient client;
        client.setBaseUrl(hub.baseUrl());
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        view.show();
        auto* options = view.findChild<QTreeWidget*>(QStringLiteral("hubOptions"));
        QVERIFY(options);
        auto rowOf = [&](const QString& quant) {
            for (int i = 0; i < options->topLevelItemCount(); ++i)
                if (options->topLevelItem(i)->text(0) == quant) return i;
            return -1;
        };

        // A supported architecture: Q4_K_M and IQ1_S both run.
        view.showRepo(QStringLiteral("acme/tiny-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 2, 5000);
        const int q4 = rowOf(QStringLiteral("Q4_K_M")), iq1 = rowOf(QStringLiteral("IQ1_S"));
        QVERIFY(q4 >= 0 && iq1 >= 0);
        QVERIFY(!options->topLevelItem(q4)->text(2).contains(QStringLiteral("won't run")));
        QVERIFY(!options->topLevelItem(iq1)->text(2).contains(QStringLiteral("won't run")));
        QVERIFY(view.optionWontRunReason(iq1).isEmpty());
        view.selectOption(q4);
        QVERIFY(view.canDownloadSelected());
        view.selectOption(iq1);
        QVERIFY(view.canDownloadSelected());

        // An architecture the engine does not bind: every file is marked, none can be downloaded.
        view.showRepo(QStringLiteral("acme/mamba-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 1, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(view.optionWontRunReason(0), QStringLiteral("architecture 'mamba' not supported"), 5000);
        QTRY_VERIFY_WITH_TIMEOUT(options->topLevelItem(0) &&
                                     options->topLevelItem(0)->text(2).contains(QStringLiteral("architecture 'mamba'")),
                                 5000);
        view.selectOption(0);
        QVERIFY(!view.canDownloadSelected());
        QVERIFY(hub.downloads().empty());
    }

    // The library and Discover badges say what the settings page's estimate says, for the load
    // settings and devices of the moment (before: file size against free RAM only).
    void badgesUseTheSettingsEstimate() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        TestHub hub;
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {TestHub::makeContent(4096), {}, {}});
        hub.setArchitecture("acme/tiny-GGUF", "qwen2");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        const QString model = QDir(folder).filePath(QStringLiteral("stories.gguf"));
        QVERIFY(copyFile(QString::fromStdString(test::testDataPath("models/stories260K.gguf")), model));
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        useDevice(settings, QStringLiteral("vulkan:0"));
        app::ModelLibrary library(folder);
        app::EngineHost engine;
        app::HubClient client;
        client.setBaseUrl(hub.baseUrl());
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        const DeviceList devices = machineWithGpu(uint64_t(4) << 30);
        view.setDevices(devices);
        view.setAvailableRam(8 * kGiB);
        view.show();
        library.refresh();
        QTRY_COMPARE_WITH_TIMEOUT(view.libraryFitBadge(model), QStringLiteral("fits on GPU"), 10000);

        // The settings page, same settings and devices: the same verdict.
        ui::SettingsView page(&settings, &engine);
        page.setDevices(devices);
        page.setModelPath(model);
        QCOMPARE(page.fitText(), view.libraryFitBadge(model));

        view.showRepo(QStringLiteral("acme/tiny-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 1, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(view.optionFitBadge(0), QStringLiteral("fits on GPU"), 5000);
        auto* options = view.findChild<QTreeWidget*>(QStringLiteral("hubOptions"));
        QCOMPARE(options->topLevelItem(0)->text(2), QStringLiteral("fits on GPU"));

        // The CPU: in RAM; and with (almost) no RAM: won't fit, on both tabs.
        useDevice(settings, QStringLiteral("cpu"));
        QTRY_COMPARE_WITH_TIMEOUT(view.libraryFitBadge(model), QStringLiteral("fits in RAM"), 10000);
        QCOMPARE(view.optionFitBadge(0), QStringLiteral("fits in RAM"));
        QTRY_COMPARE_WITH_TIMEOUT(options->topLevelItem(0)->text(2), QStringLiteral("fits in RAM"), 5000);
        view.setAvailableRam(1 << 20);
        QTRY_COMPARE_WITH_TIMEOUT(view.libraryFitBadge(model), QStringLiteral("won't fit"), 10000);
        QCOMPARE(view.optionFitBadge(0), QStringLiteral("won't fit"));
    }

    // Delete asks what it will do and does exactly that; a loaded model is unloaded first.
    void deleteSaysWhetherTheFileGoes() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString stories = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        const QString inside = QDir(folder).filePath(QStringLiteral("inside.gguf"));
        const QString loadedOne = QDir(folder).filePath(QStringLiteral("loaded.gguf"));
        const QString outside = dir.filePath(QStringLiteral("elsewhere/outside.gguf"));
        QVERIFY(copyFile(stories, inside));
        QVERIFY(copyFile(stories, loadedOne));
        QVERIFY(copyFile(stories, outside));
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(folder);
        app::EngineHost engine;
        app::HubClient client;
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        view.show();
        QSignalSpy imported(&library, &app::ModelLibrary::imported);
        library.importModel(outside, app::ModelLibrary::ImportMode::Reference);
        QVERIFY(imported.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(library.models().size() == 3, 10000);
        const QString outsideAbs = QFileInfo(outside).absoluteFilePath();

        // "No" keeps everything.
        QString text;
        QVERIFY(view.selectModel(inside));
        answerNextBox(QMessageBox::No, &text);
        view.deleteSelected();
        QVERIFY2(text.contains(QStringLiteral("from disk")), qPrintable(text));
        QVERIFY(QFile::exists(inside));

        // In the models folder: the file goes.
        QVERIFY(view.selectModel(inside));
        answerNextBox(QMessageBox::Yes, &text);
        view.deleteSelected();
        QVERIFY2(text.startsWith(QStringLiteral("Delete model")) && text.contains(QStringLiteral("from disk?")), qPrintable(text));
        QVERIFY(!QFile::exists(inside));
        QTRY_VERIFY_WITH_TIMEOUT(!library.find(inside), 10000);

        // Referenced elsewhere: only the entry goes, the question says where the file stays.
        QVERIFY(view.selectModel(outsideAbs));
        answerNextBox(QMessageBox::Yes, &text);
        view.deleteSelected();
        QVERIFY2(text.contains(QStringLiteral("Remove")) && text.contains(QStringLiteral("The file stays at")) &&
                     text.contains(QDir::toNativeSeparators(outsideAbs)),
                 qPrintable(text));
        QVERIFY(QFile::exists(outside));
        QTRY_VERIFY_WITH_TIMEOUT(!library.find(outsideAbs), 10000);

        // Loaded: unloaded first, then deleted.
        QSignalSpy loaded(&engine, &app::EngineHost::loaded);
        app::LoadSettings cpu;
        cpu.contextLength = 256;
        cpu.maxParallel = 1;
        engine.loadModel(loadedOne, cpu);
        QVERIFY(loaded.wait(30000));
        QVERIFY(engine.isLoaded());
        QVERIFY(view.selectModel(loadedOne));
        answerNextBox(QMessageBox::Yes, &text);
        view.deleteSelected();
        QVERIFY2(text.contains(QStringLiteral("unloaded first")), qPrintable(text));
        QVERIFY(!engine.isLoaded());
        QVERIFY(!QFile::exists(loadedOne));
    }

    // Hub errors stay on the Discover page until a Retry succeeds; the status bar still hears them.
    void hubErrorsShowOnThePage() {
        TestHub hub;
        hub.searchStatus = 500;
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        app::EngineHost engine;
        app::HubClient client;
        client.setBaseUrl(hub.baseUrl());
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        view.show();
        view.showDiscoverTab();
        QSignalSpy status(&view, &ui::ModelsView::statusMessage);
        QVERIFY(view.hubError().isEmpty());
        view.search(QStringLiteral("tiny"));
        QTRY_VERIFY_WITH_TIMEOUT(!view.hubError().isEmpty(), 5000);
        auto* label = view.findChild<QLabel*>(QStringLiteral("hubError"));
        auto* retry = view.findChild<QPushButton*>(QStringLiteral("hubRetry"));
        QVERIFY(label && retry && label->isVisible() && retry->isVisible());
        QVERIFY2(view.hubError().contains(QStringLiteral("500")) || view.hubError().contains(QStringLiteral("down")),
                 qPrintable(view.hubError()));
        bool heard = false;
        for (const auto& args : status)
            heard = heard || (args.at(0).toString().startsWith(QStringLiteral("Hub:")) &&
                              args.at(1).value<ui::StatusLevel>() == ui::StatusLevel::Error);
        QVERIFY(heard);
        QTest::qWait(300); // still there after a while
        QVERIFY(!view.hubError().isEmpty());

        hub.searchStatus = 200;
        retry->click();
        auto* repos = view.findChild<QListWidget*>(QStringLiteral("hubRepos"));
        QTRY_VERIFY_WITH_TIMEOUT(repos->count() == 2 && repos->item(0)->text().contains(QStringLiteral("acme/tiny-GGUF")), 5000);
        QVERIFY(view.hubError().isEmpty());
        QVERIFY(!label->isVisible());

        // A repository that is not there.
        view.showRepo(QStringLiteral("acme/missing-GGUF"));
        QTRY_VERIFY_WITH_TIMEOUT(!view.hubError().isEmpty(), 5000);
        hub.addFile("acme/missing-GGUF", "m-Q4_K_M.gguf", {TestHub::makeContent(1024), {}, {}});
        view.retryHub();
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 1, 5000);
        QVERIFY(view.hubError().isEmpty());
    }

    // One search result is "1 repository" with "1 download", not "1 repositories".
    void searchCountsAgreeWithTheirNumber() {
        TestHub hub;
        hub.searchBody = R"([{"id":"acme/only-GGUF","downloads":1,"likes":0}])";
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        app::EngineHost engine;
        app::HubClient client;
        client.setBaseUrl(hub.baseUrl());
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        QSignalSpy status(&view, &ui::ModelsView::statusMessage);
        view.search(QStringLiteral("only"));
        auto* repos = view.findChild<QListWidget*>(QStringLiteral("hubRepos"));
        QTRY_VERIFY_WITH_TIMEOUT(repos->count() == 1 && repos->item(0)->text().contains(QStringLiteral("acme/only-GGUF")),
                                 5000);
        QVERIFY2(repos->item(0)->text().endsWith(QStringLiteral("(1 download)")), qPrintable(repos->item(0)->text()));
        QVERIFY(!status.isEmpty());
        QCOMPARE(status.last().at(0).toString(), QStringLiteral("1 repository"));
        QCOMPARE(status.last().at(1).value<ui::StatusLevel>(), ui::StatusLevel::Info); // the status bar's, no notification
    }

    void startersShowSizeLicenseAndNotes() {
        TestHub hub; // outlives the client, so no connection keeps it waiting
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        app::EngineHost engine;
        app::HubClient client;
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        auto* repos = view.findChild<QListWidget*>(QStringLiteral("hubRepos"));
        const QList<app::StarterModel> starters = app::ModelLibrary::starterModels();
        QVERIFY(!starters.isEmpty());
        QCOMPARE(repos->count(), starters.size());
        for (int i = 0; i < starters.size(); ++i) {
            const QString text = repos->item(i)->text();
            const app::StarterModel& s = starters[i];
            QVERIFY2(text.contains(s.title) && text.contains(s.license) && text.contains(s.notes) &&
                         text.contains(QLocale().formattedDataSize(s.approxSizeBytes)),
                     qPrintable(text));
            QVERIFY2(text.contains(QStringLiteral("fits")) || text.contains(QStringLiteral("tight")) ||
                         text.contains(QStringLiteral("won't")) || text.contains(QStringLiteral("unknown")),
                     qPrintable(text));
            QCOMPARE(repos->item(i)->data(Qt::UserRole).toString(), s.repo);
            // What its card shows: the title, then parameters, quantization, size and license,
            // then the fit and the notes.
            const QModelIndex at = repos->model()->index(i, 0);
            QCOMPARE(ui::ModelCardDelegate::titleLine(at), s.title);
            const QString detail = ui::ModelCardDelegate::detailLine(at);
            QVERIFY2(detail.contains(s.quantization) && detail.contains(s.license) &&
                         detail.contains(QLocale().formattedDataSize(s.approxSizeBytes)),
                     qPrintable(detail));
            QVERIFY(!at.data(app::ModelListModel::FitRole).toString().isEmpty());
            QCOMPARE(at.data(ui::ModelCardDelegate::NoteRole).toString(), s.notes);
        }
        view.resize(1100, 700);
        view.show();
        view.showDiscoverTab();
        QVERIFY(view.grab().save(QDir(test::chatScreenshotDir()).filePath(QStringLiteral("starters.png"))));
        // After a search, an empty one brings them back.
        client.setBaseUrl(hub.baseUrl());
        view.search(QStringLiteral("tiny"));
        QTRY_COMPARE_WITH_TIMEOUT(repos->count(), 2, 5000);
        view.search(QString());
        QCOMPARE(repos->count(), starters.size());
        QVERIFY(repos->item(0)->text().contains(starters.front().title));
    }

    // A queue left by an earlier run (here a paused download) is listed again at start.
    void restoredDownloadsAreListed() {
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(writePausedDownload(folder));
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(folder);
        app::EngineHost engine;
        app::HubClient client;
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        QCOMPARE(view.transferCount(), 1);
        QCOMPARE(downloads.queueFile(), QDir(folder).filePath(QStringLiteral(".hearth-downloads.json")));
        const quint64 id = view.transferId(0);
        QTRY_COMPARE_WITH_TIMEOUT(downloads.state(id), app::DownloadState::Paused, 5000);
        auto* transfers = view.findChild<QTreeWidget*>(QStringLiteral("transfers"));
        QCOMPARE(transfers->topLevelItem(0)->text(0), QStringLiteral("x-Q4_K_M.gguf"));
        QTRY_COMPARE_WITH_TIMEOUT(transfers->topLevelItem(0)->text(1), QStringLiteral("paused"), 5000);
    }

    // Pause, Resume and Cancel are on only when they apply to the selected download: none
    // selected, all off; paused, Resume and Cancel; queued or running, Pause and Cancel;
    // cancelled, none.
    void transferButtonsFollowTheState() {
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(writePausedDownload(folder));
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(folder);
        app::EngineHost engine;
        app::HubClient client;
        app::DownloadManager downloads;
        app::DownloadRetryPolicy slow;
        slow.initialDelayMs = 60000; // a refused connection waits (Retrying) rather than failing
        downloads.setRetryPolicy(slow);
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        auto button = [&view](const QString& text) {
            for (QPushButton* b : view.findChildren<QPushButton*>())
                if (b->text() == text) return b;
            return static_cast<QPushButton*>(nullptr);
        };
        QPushButton* pause = button(QStringLiteral("Pause"));
        QPushButton* resume = button(QStringLiteral("Resume"));
        QPushButton* cancel = button(QStringLiteral("Cancel"));
        QVERIFY(pause && resume && cancel);
        auto* transfers = view.findChild<QTreeWidget*>(QStringLiteral("transfers"));
        QCOMPARE(view.transferCount(), 1);
        const quint64 id = view.transferId(0);
        QTRY_COMPARE_WITH_TIMEOUT(downloads.state(id), app::DownloadState::Paused, 5000);
        QVERIFY(!pause->isEnabled() && !resume->isEnabled() && !cancel->isEnabled()); // nothing selected

        transfers->setCurrentItem(transfers->topLevelItem(0));
        QVERIFY(!pause->isEnabled());
        QVERIFY(resume->isEnabled());
        QVERIFY(cancel->isEnabled());

        resume->click();
        QTRY_VERIFY_WITH_TIMEOUT(downloads.state(id) != app::DownloadState::Paused, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(pause->isEnabled() && !resume->isEnabled() && cancel->isEnabled(), 5000);

        pause->click();
        QTRY_COMPARE_WITH_TIMEOUT(downloads.state(id), app::DownloadState::Paused, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(!pause->isEnabled() && resume->isEnabled() && cancel->isEnabled(), 5000);

        cancel->click();
        QTRY_VERIFY_WITH_TIMEOUT(transfers->topLevelItem(0)->text(1) == QStringLiteral("cancelled"), 5000);
        QVERIFY(!pause->isEnabled() && !resume->isEnabled() && !cancel->isEnabled());
    }

    // A repository with a projector: its options are marked Vision with the projector's size,
    // and Download fetches it too unless unticked; a model downloaded without it is offered
    // "Download vision projector", which fetches it beside the model (then nothing is offered:
    // this projector is not real, so it pairs with nothing, but it is there); a model the app
    // did not download is offered nothing; a repository without one shows no mark.
    void visionProjectorWithTheModel() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString stories = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        QFile storiesFile(stories);
        QVERIFY(storiesFile.open(QIODevice::ReadOnly));
        const std::string storiesBytes = storiesFile.readAll().toStdString();
        TestHub hub;
        hub.addFile("acme/vision-GGUF", "stories-Q8_0.gguf", {storiesBytes, {}, {}});
        hub.addFile("acme/vision-GGUF", "mmproj-F16.gguf", {TestHub::makeContent(3 << 20, 5), {}, {}});
        hub.addFile("acme/vision-GGUF", "mmproj-F32.gguf", {TestHub::makeContent(6 << 20, 6), {}, {}});
        hub.setArchitecture("acme/vision-GGUF", "llama");
        hub.addFile("acme/tiny-GGUF", "tiny-Q4_K_M.gguf", {TestHub::makeContent(4096), {}, {}});
        hub.setArchitecture("acme/tiny-GGUF", "llama");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(copyFile(stories, QDir(folder).filePath(QStringLiteral("copied.gguf"))));
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::ModelLibrary library(folder);
        app::EngineHost engine;
        app::HubClient client;
        client.setBaseUrl(hub.baseUrl());
        app::DownloadManager downloads;
        ui::ModelsView view(&library, &engine, &client, &downloads, &settings);
        view.setDevices(machineWithGpu(uint64_t(4) << 30));
        view.show();
        QSignalSpy completed(&downloads, &app::DownloadManager::completed);
        auto* options = view.findChild<QTreeWidget*>(QStringLiteral("hubOptions"));
        auto* note = view.findChild<QLabel*>(QStringLiteral("hubProjector"));
        auto* withProjector = view.findChild<QCheckBox*>(QStringLiteral("withProjector"));
        auto* fetch = view.findChild<QPushButton*>(QStringLiteral("downloadProjector"));
        QVERIFY(options && note && withProjector && fetch);

        view.showRepo(QStringLiteral("acme/tiny-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 1, 5000);
        QVERIFY(!view.optionHasVision(0));
        QVERIFY(options->topLevelItem(0)->text(4).isEmpty());
        QVERIFY(note->isHidden() && withProjector->isHidden());

        view.showRepo(QStringLiteral("acme/vision-GGUF"));
        QTRY_COMPARE_WITH_TIMEOUT(view.shownOptionCount(), 1, 5000); // projectors are no options
        QVERIFY(view.optionHasVision(0));
        QCOMPARE(options->topLevelItem(0)->text(4), QStringLiteral("Vision"));
        QVERIFY2(options->topLevelItem(0)->text(1).contains(QLocale().formattedDataSize(3 << 20)),
                 qPrintable(options->topLevelItem(0)->text(1)));
        QVERIFY(!note->isHidden() && !withProjector->isHidden() && withProjector->isChecked());
        QVERIFY(note->text().contains(QStringLiteral("mmproj-F16.gguf")));

        // Without the projector first.
        withProjector->setChecked(false);
        view.selectOption(0);
        QTRY_VERIFY_WITH_TIMEOUT(view.canDownloadSelected(), 5000);
        QPushButton* download = nullptr;
        for (QPushButton* b : view.findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Download")) download = b;
        QVERIFY(download);
        download->click();
        QCOMPARE(view.transferCount(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(completed.size(), 1, 10000);
        const QString model = QDir(folder).filePath(QStringLiteral("stories-Q8_0.gguf"));
        QTRY_VERIFY_WITH_TIMEOUT(library.find(model) != nullptr, 10000);
        QVERIFY(view.selectModel(QDir(folder).filePath(QStringLiteral("copied.gguf"))));
        QVERIFY(!view.canFetchProjector()); // origin unknown
        QVERIFY(view.selectModel(model));
        QVERIFY(view.canFetchProjector());
        fetch->click();
        QCOMPARE(view.transferCount(), 2);
        QTRY_COMPARE_WITH_TIMEOUT(completed.size(), 2, 10000);
        QCOMPARE(QFileInfo(QDir(folder).filePath(QStringLiteral("mmproj-F16.gguf"))).size(), qint64(3 << 20));
        QTRY_VERIFY_WITH_TIMEOUT(!view.canFetchProjector(), 5000);
        for (const auto& r : hub.downloads()) QVERIFY(r.path.find("mmproj-F32") == std::string::npos);
    }
};

QTEST_MAIN(TestModelsView)
#include "test_models_view.moc"
