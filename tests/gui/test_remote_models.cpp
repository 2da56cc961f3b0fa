// Remote engines in the app: a provider added in the providers dialog (a second hearth server on
// loopback plays the cluster) lists its models in the model picker beside the local ones; choosing
// one sends the chat there and the reply streams into the chat page; the server's API key is kept
// in an owner-only file; Eject ends the remote use; an unreachable provider is a warning that stays.
// A remote model in use is shown as one on the settings page, the chat's context bar, the status
// bar and the server page: no file opened, no layer split, context or KV figures of a local model,
// and no claim that the embedded server serves it.
#include "chat_view.h"
#include "main_window.h"
#include "model_picker.h"
#include "notification_area.h"
#include "providers_dialog.h"
#include "server_view.h"
#include "settings_view.h"
#include "test_support.h"

#include "services/engine_host.h"
#include "services/remote_provider.h"

#include "hearth/devices.h"

#include "../server/loopback_server.h"

#include <QFile>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtTest>

using hearth::ui::MainWindow;

class TestRemoteModels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void remoteModelChatsInTheApp() {
        qputenv("HEARTH_NO_KEYRING", "1");
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        hearth::test::LoopbackServer cluster;
        const std::string started = hearth::test::startLoopbackServer(
            cluster, hearth::test::testDataPath("models/stories260K.gguf"), 512, "stories-remote", "cluster-key");
        QVERIFY2(started.empty(), started.c_str());
        hearth::server::Server& remote = *cluster.server;

        QTemporaryDir data;
        MainWindow window(data.path());
        window.dismissWelcome();
        window.show();
        {
            hearth::ui::ProvidersDialog dialog(window.providerStore(), window.remoteClient(), &window);
            connect(&dialog, &hearth::ui::ProvidersDialog::providersChanged, &window, &MainWindow::refreshRemoteModels);
            QVERIFY(!dialog.saveProvider(QStringLiteral("bad name!"), QStringLiteral("http://x/v1"), QString()));
            QVERIFY(dialog.saveProvider(QStringLiteral("cluster"),
                                        QStringLiteral("http://127.0.0.1:%1/v1").arg(remote.port()),
                                        QStringLiteral("cluster-key")));
            dialog.testConnection();
            QTRY_VERIFY_WITH_TIMEOUT(dialog.statusText().contains(QStringLiteral("stories-remote")), 10000);
        }
        // The key is in a file only the owner reads, not in the provider list.
        const QString keyFile = window.providerStore()->keyFilePath(QStringLiteral("cluster"));
        QVERIFY(QFile::exists(keyFile));
        QCOMPARE(QFile::permissions(keyFile) & (QFileDevice::ReadGroup | QFileDevice::ReadOther), QFileDevice::Permissions());
        QFile list(window.providerStore()->listPath());
        QVERIFY(list.open(QIODevice::ReadOnly));
        QVERIFY(!list.readAll().contains("cluster-key"));

        const QString choice = QStringLiteral("remote:cluster/stories-remote");
        auto listed = [&] {
            for (int i = 0; i < 50; ++i) {
                window.modelPicker()->choose(choice);
                if (window.engine()->isRemote()) return true;
                QTest::qWait(100);
            }
            return false;
        };
        QVERIFY(listed());
        QCOMPARE(window.engine()->model().path, choice);
        QCOMPARE(window.modelPicker()->whereText(), QStringLiteral("remote: cluster"));

        window.chatView()->setSampling(hearth::app::Sampling::greedy(24));
        QSignalSpy replies(window.chatView(), &hearth::ui::ChatView::replyFinished);
        window.chatView()->sendText(QStringLiteral("Once upon a time"));
        QVERIFY(replies.wait(30000));
        const QString reply = replies.first().first().toString();
        QVERIFY2(reply.size() > 10, qPrintable(reply));
        QVERIFY(window.chatView()->transcriptMarkdown().contains(reply.left(10)));

        // Eject ends the remote use; the provider stays configured.
        Q_EMIT window.modelPicker()->unloadRequested();
        QVERIFY(!window.engine()->isRemote());
        QVERIFY(!window.engine()->isLoaded());

        // A provider nobody answers for: a warning that stays.
        window.notifications()->dismissAll();
        hearth::app::RemoteProvider dead;
        dead.name = QStringLiteral("dead");
        dead.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:1/v1"));
        QVERIFY(window.providerStore()->setProvider(dead));
        window.refreshRemoteModels();
        QTRY_VERIFY_WITH_TIMEOUT(!window.notifications()->shown().filter(QStringLiteral("dead")).isEmpty(), 20000);
        QVERIFY(window.notifications()->shown().filter(QStringLiteral("dead")).first().startsWith(QStringLiteral("warning:")));
        remote.stop();
    }

    void remoteModelIsShownAsRemote() {
        qputenv("HEARTH_NO_KEYRING", "1");
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir data;
        MainWindow window(data.path());
        window.dismissWelcome();
        window.show();

        // The settings page first shows a local model split onto a GPU.
        hearth::DeviceList devices;
        hearth::DeviceDescription cpu;
        cpu.id = "cpu";
        cpu.name = "Test CPU";
        cpu.totalMemory = uint64_t(8) << 30;
        hearth::DeviceDescription gpu;
        gpu.kind = hearth::DeviceKind::Vulkan;
        gpu.id = "vulkan:0";
        gpu.name = "Test GPU";
        gpu.type = "discrete";
        gpu.freeMemory = uint64_t(8) << 30;
        gpu.totalMemory = uint64_t(8) << 30;
        devices.devices = {cpu, gpu};
        hearth::ui::SettingsView* settings = window.settingsView();
        settings->setDevices(devices);
        settings->selectDevice(QStringLiteral("vulkan:0"));
        settings->setGpuLayers(-1);
        settings->setModelPath(QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")));
        QVERIFY2(settings->placementText().contains(QStringLiteral("layers on vulkan:0")),
                 qPrintable(settings->placementText()));

        // Choosing a remote model asks the provider nothing until a chat is sent.
        hearth::app::RemoteProvider provider;
        provider.name = QStringLiteral("cluster");
        provider.baseUrl = QUrl(QStringLiteral("http://127.0.0.1:1/v1"));
        QVERIFY(window.providerStore()->setProvider(provider));
        window.engine()->useRemote(provider, QStringLiteral("big-model"), window.remoteClient());
        QVERIFY(window.engine()->isRemote());
        QVERIFY(window.engine()->model().isRemote());

        const QString estimate = settings->estimateText();
        QVERIFY2(estimate.contains(QStringLiteral("big-model")) && estimate.contains(QStringLiteral("cluster")) &&
                     estimate.contains(QStringLiteral("(remote)")),
                 qPrintable(estimate));
        QVERIFY2(!estimate.contains(QStringLiteral("cannot open")) && !estimate.contains(QStringLiteral("remote:")),
                 qPrintable(estimate));
        QVERIFY2(!settings->placementText().contains(QStringLiteral("layers on")), qPrintable(settings->placementText()));
        QVERIFY2(settings->placementText().contains(QStringLiteral("Does not apply")),
                 qPrintable(settings->placementText()));
        QVERIFY(settings->fallbackWarning().isEmpty());

        const QString context = window.chatView()->contextText();
        QCOMPARE(context, QStringLiteral("big-model (remote) · context managed by cluster"));
        QVERIFY(window.chatView()->canSend());

        QCOMPARE(window.engineStateText(), QStringLiteral("big-model on cluster (remote)"));
        QVERIFY(window.statsText().isEmpty());

        // The embedded server has no local model to serve meanwhile, and says so.
        {
            QTcpServer probe;
            QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
            window.serverView()->setPort(probe.serverPort());
        }
        QVERIFY(window.serverView()->start());
        QVERIFY2(window.serverView()->stateText().contains(QStringLiteral("no local model loaded")) &&
                     window.serverView()->stateText().contains(QStringLiteral("big-model on cluster")),
                 qPrintable(window.serverView()->stateText()));
        window.serverView()->stop();

        // Eject: no model again everywhere.
        Q_EMIT window.modelPicker()->unloadRequested();
        QCOMPARE(window.chatView()->contextText(), QStringLiteral("context: no model loaded"));
        QCOMPARE(window.engineStateText(), QStringLiteral("No model loaded"));
    }
};

QTEST_MAIN(TestRemoteModels)
#include "test_remote_models.moc"
