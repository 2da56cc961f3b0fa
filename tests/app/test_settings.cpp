// Settings in a temporary INI file: defaults, round trips through a second instance, validation,
// and secrets in owner-only (0600) files that never appear in the INI file.
#include "services/settings.h"

#include "test_support.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

using namespace hearth::app;

namespace {

// The file's mode bits as the operating system has them (not Qt's view of them).
int modeBits(const QString& path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0) return -1;
    return int(st.st_mode & 07777);
}

} // namespace

class TestSettings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaults() {
        QTemporaryDir dir;
        Settings s(dir.filePath(QStringLiteral("hearth.ini")));
        QCOMPARE(s.hubBaseUrl(), QUrl(QStringLiteral("https://huggingface.co")));
        QCOMPARE(s.serverHost(), QStringLiteral("127.0.0.1"));
        QCOMPARE(s.serverPort(), Settings::kDefaultServerPort);
        QVERIFY(s.accessToken().isEmpty());
        QVERIFY(s.serverApiKey().isEmpty());
        QVERIFY(s.modelsFolder().endsWith(QStringLiteral("models")));
        QCOMPARE(s.loadSettings(), LoadSettings{});
        QCOMPARE(s.parallelDownloads(), 1);
    }

    void valuesPersist() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("hearth.ini"));
        LoadSettings load;
        load.contextLength = 8192;
        load.kvType = QStringLiteral("q8_0");
        load.threads = 6;
        load.gpuLayers = 20;
        load.kvMemoryBytes = 3ull << 30;
        load.maxParallel = 2;
        load.useMmap = false;
        load.batchSize = 256;
        load.speculation = false;
        {
            Settings s(ini);
            QSignalSpy changed(&s, &Settings::changed);
            s.setModelsFolder(dir.filePath(QStringLiteral("my models/")));
            QVERIFY(s.setHubBaseUrl(QUrl(QStringLiteral("http://127.0.0.1:9999/"))));
            s.setServerHost(QStringLiteral("0.0.0.0"));
            QVERIFY(s.setServerPort(9000));
            s.setLoadSettings(load);
            s.setParallelDownloads(3);
            QVERIFY(changed.count() >= 5);
        }
        Settings again(ini);
        QCOMPARE(again.modelsFolder(), dir.filePath(QStringLiteral("my models")));
        QCOMPARE(again.hubBaseUrl(), QUrl(QStringLiteral("http://127.0.0.1:9999")));
        QCOMPARE(again.serverHost(), QStringLiteral("0.0.0.0"));
        QCOMPARE(again.serverPort(), 9000);
        QCOMPARE(again.loadSettings(), load);
        QCOMPARE(again.parallelDownloads(), 3);
    }

    // A draft model is kept per model (paths with slashes and spaces as keys), survives a restart,
    // and "" forgets it; the load settings never carry one.
    void draftModelsPerModel() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("hearth.ini"));
        const QString a = dir.filePath(QStringLiteral("my models/a 8B.gguf")), b = dir.filePath(QStringLiteral("b.gguf"));
        {
            Settings s(ini);
            QCOMPARE(s.draftModelFor(a), QString());
            s.setDraftModelFor(a, dir.filePath(QStringLiteral("my models/a 1B.gguf")));
            s.setDraftModelFor(b, dir.filePath(QStringLiteral("b-small.gguf")));
            s.setDraftModelFor(QString(), b); // no model: nothing
            QCOMPARE(s.loadSettings().draftModel, QString());
        }
        Settings again(ini);
        QCOMPARE(again.draftModelFor(a), dir.filePath(QStringLiteral("my models/a 1B.gguf")));
        QCOMPARE(again.draftModelFor(b), dir.filePath(QStringLiteral("b-small.gguf")));
        QCOMPARE(again.draftModelFor(QString()), QString());
        again.setDraftModelFor(a, QString());
        QCOMPARE(again.draftModelFor(a), QString());
        QCOMPARE(again.draftModelFor(b), dir.filePath(QStringLiteral("b-small.gguf")));
    }

    // HEARTH_HUB_URL (an http(s) URL) wins over the stored hub, as it does for hearth-cli pull;
    // anything else there is ignored. New settings carry chat sampling, CORS origins, theme.
    void environmentAndNewKeys() {
        QTemporaryDir dir;
        Settings s(dir.filePath(QStringLiteral("hearth.ini")));
        QVERIFY(s.setHubBaseUrl(QUrl(QStringLiteral("https://mirror.example"))));
        qputenv("HEARTH_HUB_URL", "http://127.0.0.1:4242/");
        QCOMPARE(s.hubBaseUrl(), QUrl(QStringLiteral("http://127.0.0.1:4242")));
        qputenv("HEARTH_HUB_URL", "ftp://nope");
        QCOMPARE(s.hubBaseUrl(), QUrl(QStringLiteral("https://mirror.example")));
        qunsetenv("HEARTH_HUB_URL");
        // The models folder lies beside the settings file: one data folder holds both.
        QCOMPARE(s.modelsFolder(), dir.filePath(QStringLiteral("models")));
        Sampling chat;
        chat.temperature = 0.3f;
        chat.maxTokens = 777;
        s.setChatSampling(chat);
        s.setCorsOrigins({QStringLiteral(" http://localhost:3000 "), QString(), QStringLiteral("*")});
        s.setTheme(QStringLiteral("dark"));
        s.setIdleUnloadMinutes(15);
        s.sync();
        Settings again(dir.filePath(QStringLiteral("hearth.ini")));
        QCOMPARE(again.chatSampling().maxTokens, 777);
        QCOMPARE(again.chatSampling().temperature, 0.3f);
        QCOMPARE(again.corsOrigins(), QStringList({QStringLiteral("http://localhost:3000"), QStringLiteral("*")}));
        QCOMPARE(again.theme(), QStringLiteral("dark"));
        QCOMPARE(again.idleUnloadMinutes(), 15);
        again.setTheme(QStringLiteral("purple"));
        QCOMPARE(again.theme(), QStringLiteral("system"));
    }

    void badValuesAreRefused() {
        QTemporaryDir dir;
        Settings s(dir.filePath(QStringLiteral("hearth.ini")));
        QVERIFY(!s.setServerPort(0));
        QVERIFY(!s.setServerPort(70000));
        QVERIFY(s.lastError().contains(QStringLiteral("70000")));
        QCOMPARE(s.serverPort(), Settings::kDefaultServerPort);
        QVERIFY(!s.setHubBaseUrl(QUrl(QStringLiteral("ftp://example.com"))));
        QVERIFY(!s.setHubBaseUrl(QUrl(QStringLiteral("not a url"))));
        QCOMPARE(s.hubBaseUrl(), QUrl(QStringLiteral("https://huggingface.co")));
    }

    void secretsAreOwnerOnlyFiles() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("hearth.ini"));
        const mode_t oldMask = ::umask(022); // a typical umask that would make files 0644
        {
            Settings s(ini);
            QVERIFY(s.setAccessToken(QStringLiteral("  hf_secret_token_123\n")));
            QVERIFY(s.setServerApiKey(QStringLiteral("sk-local-456")));
            s.setServerPort(9001);
            s.sync();
            QCOMPARE(modeBits(s.accessTokenPath()), 0600);
            QCOMPARE(modeBits(s.serverApiKeyPath()), 0600);
            QVERIFY(s.accessTokenPath() != ini);
        }
        ::umask(oldMask);
        Settings s(ini);
        QCOMPARE(s.accessToken(), QStringLiteral("hf_secret_token_123"));
        QCOMPARE(s.serverApiKey(), QStringLiteral("sk-local-456"));
        QFile iniFile(ini);
        QVERIFY(iniFile.open(QIODevice::ReadOnly));
        const QByteArray iniText = iniFile.readAll();
        QVERIFY(!iniText.contains("hf_secret"));
        QVERIFY(!iniText.contains("sk-local"));

        // Replacing keeps 0600; loosened permissions are tightened on the next read.
        QVERIFY(s.setAccessToken(QStringLiteral("hf_other")));
        QCOMPARE(modeBits(s.accessTokenPath()), 0600);
        QVERIFY(QFile::setPermissions(s.accessTokenPath(), QFileDevice::ReadOwner | QFileDevice::WriteOwner |
                                                              QFileDevice::ReadGroup | QFileDevice::ReadOther));
        QCOMPARE(s.accessToken(), QStringLiteral("hf_other"));
        QCOMPARE(modeBits(s.accessTokenPath()), 0600);

        // Clearing deletes the file.
        QVERIFY(s.setAccessToken(QString()));
        QVERIFY(!QFile::exists(s.accessTokenPath()));
        QVERIFY(s.accessToken().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestSettings)
#include "test_settings.moc"
