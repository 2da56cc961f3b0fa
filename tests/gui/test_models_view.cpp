// The hub browser on the models page, offscreen, against a stand-in hub: files this build cannot
// run (an unsupported architecture from the hub's GGUF metadata) stay listed, greyed and marked
// "won't run here" with the reason, and Download is off for them; the others (IQ1_S included,
// since it dequantizes) keep their fit badge and can be downloaded.
#include "models_view.h"

#include "../app/test_hub.h"

#include "services/download_manager.h"
#include "services/engine_host.h"
#include "services/hub_client.h"
#include "services/model_library.h"
#include "services/settings.h"

#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

using namespace hearth;
using hearth::test::TestHub;

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
};

QTEST_MAIN(TestModelsView)
#include "test_models_view.moc"
