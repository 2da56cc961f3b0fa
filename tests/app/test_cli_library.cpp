// The real hearth-cli binary's pull, ls, rm and ps against a stand-in hub on 127.0.0.1
// (HEARTH_HUB_URL) and a temporary data folder (HEARTH_DATA_DIR): the default quantization, an
// exact one, a resumed .part, a corrupt file refused and deleted, split parts, the library listed
// and pruned (a referenced file only forgotten), and ps against a hearth-server and against none.
#include "test_hub.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QtTest>

using hearth::test::TestHub;

namespace {

struct Run {
    int code = -1;
    QString out, err;
};

std::string readAll(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

} // namespace

class TestCliLibrary : public QObject {
    Q_OBJECT

    std::unique_ptr<TestHub> m_hub;
    QTemporaryDir m_data;
    std::string m_model; // stories260K.gguf's bytes

    QString cli() const { return hearth::test::binDir() + QStringLiteral("/hearth-cli"); }
    QString models() const { return m_data.filePath(QStringLiteral("models")); }

    Run run(const QStringList& args, int timeoutMs = 60000) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HEARTH_HUB_URL"), m_hub->baseUrl().toString());
        env.insert(QStringLiteral("HEARTH_DATA_DIR"), m_data.path());
        env.remove(QStringLiteral("HEARTH_API_KEY"));
        p.setProcessEnvironment(env);
        p.start(cli(), args);
        Run r;
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
            r.err = QStringLiteral("timed out");
            return r;
        }
        r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = QString::fromUtf8(p.readAllStandardOutput());
        r.err = QString::fromUtf8(p.readAllStandardError());
        return r;
    }

private Q_SLOTS:
    void initTestCase() {
        if (!QFileInfo::exists(cli())) QSKIP("hearth-cli was not built with the library commands");
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QVERIFY(m_data.isValid());
        m_model = readAll(QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))));
        QVERIFY(m_model.size() > 100000);
        m_hub = std::make_unique<TestHub>();
        m_hub->addFile("acme/tiny-GGUF", "stories-Q8_0.gguf", {m_model, {}, {}});
        m_hub->addFile("acme/tiny-GGUF", "sub/stories-Q4_K_M.gguf", {m_model, {}, {}});
        std::string corrupt = m_model;
        corrupt[corrupt.size() / 2] ^= 0x5a;
        m_hub->addFile("acme/tiny-GGUF", "stories-Q5_K_M.gguf", {m_model, {}, corrupt});
        m_hub->addFile("acme/split-GGUF", "big-Q4_K_M-00001-of-00002.gguf", {TestHub::makeContent(70000, 1), {}, {}});
        m_hub->addFile("acme/split-GGUF", "big-Q4_K_M-00002-of-00002.gguf", {TestHub::makeContent(50000, 2), {}, {}});
        m_hub->addFile("acme/split-GGUF", "big-Q8_0.gguf", {TestHub::makeContent(90000, 3), {}, {}});
        m_hub->addFile("acme/see-GGUF", "see-Q4_K_M.gguf", {TestHub::makeContent(40000, 4), {}, {}});
        m_hub->addFile("acme/see-GGUF", "mmproj-F32.gguf", {TestHub::makeContent(30000, 5), {}, {}});
        m_hub->addFile("acme/see-GGUF", "mmproj-F16.gguf", {TestHub::makeContent(20000, 6), {}, {}});
        m_hub->addFile("acme/look-GGUF", "look-Q8_0.gguf", {TestHub::makeContent(40000, 7), {}, {}});
        m_hub->addFile("acme/look-GGUF", "mmproj-F16.gguf", {TestHub::makeContent(21000, 8), {}, {}});
    }

    // A vision model comes with its projector (F16 before F32), recorded as the repository's; a
    // second repository's projector of the same name is kept apart; --no-mmproj leaves it.
    void pullBringsTheVisionProjector() {
        const Run r = run({QStringLiteral("pull"), QStringLiteral("acme/see-GGUF")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("see-Q4_K_M.gguf"))), TestHub::makeContent(40000, 4));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("mmproj-F16.gguf"))), TestHub::makeContent(20000, 6));
        QVERIFY(!QFileInfo::exists(QDir(models()).filePath(QStringLiteral("mmproj-F32.gguf"))));
        const QJsonObject origins =
            QJsonDocument::fromJson(QByteArray::fromStdString(readAll(QDir(models()).filePath(QStringLiteral(".hearth-origins.json")))))
                .object();
        QVERIFY2(QJsonDocument(origins).toJson().contains("acme/see-GGUF"), qPrintable(QJsonDocument(origins).toJson()));
        // Pulled again: nothing downloaded.
        const Run again = run({QStringLiteral("pull"), QStringLiteral("acme/see-GGUF")});
        QVERIFY2(again.code == 0 && again.out.contains(QStringLiteral("(vision projector) is there already")),
                 qPrintable(again.out + again.err));
        // Another repository's mmproj-F16.gguf does not replace it.
        const Run other = run({QStringLiteral("pull"), QStringLiteral("acme/look-GGUF")});
        QVERIFY2(other.code == 0, qPrintable(other.out + other.err));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("mmproj-F16.gguf"))), TestHub::makeContent(20000, 6));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("look-GGUF-mmproj-F16.gguf"))),
                 TestHub::makeContent(21000, 8));
        // --no-mmproj: the model only.
        QFile::remove(QDir(models()).filePath(QStringLiteral("look-Q8_0.gguf")));
        QFile::remove(QDir(models()).filePath(QStringLiteral("look-GGUF-mmproj-F16.gguf")));
        const Run plain = run({QStringLiteral("pull"), QStringLiteral("acme/look-GGUF"), QStringLiteral("--no-mmproj")});
        QVERIFY2(plain.code == 0, qPrintable(plain.out + plain.err));
        QVERIFY(QFileInfo::exists(QDir(models()).filePath(QStringLiteral("look-Q8_0.gguf"))));
        QVERIFY(!QFileInfo::exists(QDir(models()).filePath(QStringLiteral("look-GGUF-mmproj-F16.gguf"))));
        // Out of the way of the library tests that follow.
        for (const char* name : {"see-Q4_K_M.gguf", "mmproj-F16.gguf", "look-Q8_0.gguf", ".hearth-origins.json"})
            QFile::remove(QDir(models()).filePath(QString::fromLatin1(name)));
    }

    // No quantization named: Q4_K_M, from a sub-folder of the repository, verified.
    void pullDefaultQuantization() {
        const Run r = run({QStringLiteral("pull"), QStringLiteral("acme/tiny-GGUF")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        const QString path = QDir(models()).filePath(QStringLiteral("stories-Q4_K_M.gguf"));
        QCOMPARE(TestHub::sha256(readAll(path)), TestHub::sha256(m_model));
        QVERIFY(!QFileInfo::exists(path + QStringLiteral(".part")));
        QVERIFY2(r.out.contains(QStringLiteral("100%")), qPrintable(r.out)); // plain progress lines
        QVERIFY2(r.out.contains(QStringLiteral("success")), qPrintable(r.out));
        // A second pull finds it there and downloads nothing.
        const size_t before = m_hub->downloads().size();
        const Run again = run({QStringLiteral("pull"), QStringLiteral("acme/tiny-GGUF:q4_k_m")});
        QVERIFY2(again.code == 0, qPrintable(again.out + again.err));
        QCOMPARE(m_hub->downloads().size(), before);
    }

    // A .part left by an interrupted pull is continued with a Range request.
    void pullResumesPart() {
        const QString path = QDir(models()).filePath(QStringLiteral("stories-Q8_0.gguf"));
        QVERIFY(QDir().mkpath(models()));
        const size_t half = m_model.size() / 2;
        {
            QFile part(path + QStringLiteral(".part"));
            QVERIFY(part.open(QIODevice::WriteOnly));
            part.write(m_model.data(), qint64(half));
        }
        const Run r = run({QStringLiteral("pull"), QStringLiteral("acme/tiny-GGUF:Q8_0")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("resuming")), qPrintable(r.out));
        QCOMPARE(TestHub::sha256(readAll(path)), TestHub::sha256(m_model));
        bool ranged = false;
        for (const auto& d : m_hub->downloads())
            if (d.path.find("stories-Q8_0.gguf") != std::string::npos && d.range == "bytes=" + std::to_string(half) + "-")
                ranged = true;
        QVERIFY(ranged);
    }

    // The served bytes do not match the hub's lfs.oid: exit 1, and nothing is left behind.
    void pullRefusesCorruptFile() {
        const Run r = run({QStringLiteral("pull"), QStringLiteral("acme/tiny-GGUF:Q5_K_M")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(QStringLiteral("corrupt")) && r.err.contains(QStringLiteral("SHA-256")), qPrintable(r.err));
        const QString path = QDir(models()).filePath(QStringLiteral("stories-Q5_K_M.gguf"));
        QVERIFY(!QFileInfo::exists(path));
        QVERIFY(!QFileInfo::exists(path + QStringLiteral(".part")));
    }

    void pullSplitModelAndExactFile() {
        Run r = run({QStringLiteral("pull"), QStringLiteral("acme/split-GGUF")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("big-Q4_K_M-00001-of-00002.gguf"))),
                 TestHub::makeContent(70000, 1));
        QCOMPARE(readAll(QDir(models()).filePath(QStringLiteral("big-Q4_K_M-00002-of-00002.gguf"))),
                 TestHub::makeContent(50000, 2));
        r = run({QStringLiteral("pull"), QStringLiteral("acme/split-GGUF:big-Q8_0.gguf")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY(QFileInfo::exists(QDir(models()).filePath(QStringLiteral("big-Q8_0.gguf"))));
    }

    void pullErrors() {
        Run r = run({QStringLiteral("pull"), QStringLiteral("acme/tiny-GGUF:IQ1_S")});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(QStringLiteral("no IQ1_S")) && r.err.contains(QStringLiteral("Q8_0")), qPrintable(r.err));
        r = run({QStringLiteral("pull"), QStringLiteral("acme/missing-GGUF")});
        QCOMPARE(r.code, 1);
        r = run({QStringLiteral("pull"), QStringLiteral("not a repo")});
        QCOMPARE(r.code, 2);
    }

    // ls lists the folder and the references; rm deletes folder files (all parts) and only
    // forgets referenced ones.
    void lsAndRm() {
        QTemporaryDir elsewhere;
        const QString external = elsewhere.filePath(QStringLiteral("mine.gguf"));
        QVERIFY(QFile::copy(QString::fromStdString(hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))),
                            external));
        {
            QFile lib(QDir(models()).filePath(QStringLiteral(".hearth-library.json")));
            QVERIFY(lib.open(QIODevice::WriteOnly));
            lib.write(QJsonDocument(QJsonObject{{QStringLiteral("references"), QJsonArray{external}}}).toJson());
        }
        Run r = run({QStringLiteral("ls")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        for (const char* name : {"stories-Q4_K_M.gguf", "stories-Q8_0.gguf", "big-Q4_K_M-00001-of-00002.gguf (2 parts)",
                                 "mine.gguf (ref)"})
            QVERIFY2(r.out.contains(QLatin1String(name)), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("F32")) && r.out.contains(QStringLiteral("MB")), qPrintable(r.out));
        QVERIFY2(!r.out.contains(QStringLiteral("Q5_K_M")), qPrintable(r.out));

        r = run({QStringLiteral("rm"), QStringLiteral("stories-Q4_K_M")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY(!QFileInfo::exists(QDir(models()).filePath(QStringLiteral("stories-Q4_K_M.gguf"))));
        r = run({QStringLiteral("rm"), QDir(models()).filePath(QStringLiteral("big-Q4_K_M-00001-of-00002.gguf"))});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY(!QFileInfo::exists(QDir(models()).filePath(QStringLiteral("big-Q4_K_M-00002-of-00002.gguf"))));
        r = run({QStringLiteral("rm"), QStringLiteral("mine.gguf")});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("stays")), qPrintable(r.out));
        QVERIFY(QFileInfo::exists(external));
        r = run({QStringLiteral("rm"), QStringLiteral("no-such-model")});
        QCOMPARE(r.code, 1);

        r = run({QStringLiteral("ls")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY2(r.out.contains(QStringLiteral("stories-Q8_0.gguf")), qPrintable(r.out));
        for (const char* gone : {"stories-Q4_K_M", "big-Q4_K_M", "mine.gguf"})
            QVERIFY2(!r.out.contains(QLatin1String(gone)), qPrintable(r.out));
    }

    // ps against a hearth-server serving this data folder, and against a port nobody listens on.
    void ps() {
        const QString server = hearth::test::binDir() + QStringLiteral("/hearth-server");
        if (!QFileInfo::exists(server)) QSKIP("hearth-server was not built");
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(server, {QStringLiteral("--data-dir"), m_data.path(), QStringLiteral("--port"), QStringLiteral("0"),
                         QStringLiteral("--threads"), QStringLiteral("1")});
        QVERIFY(p.waitForStarted());
        QString log;
        int port = 0;
        static const QRegularExpression listening(QStringLiteral("listening on http://127\\.0\\.0\\.1:(\\d+)"));
        for (int i = 0; i < 100 && port == 0; ++i) {
            p.waitForReadyRead(100);
            log += QString::fromUtf8(p.readAll());
            const auto m = listening.match(log);
            if (m.hasMatch()) port = m.captured(1).toInt();
        }
        QVERIFY2(port > 0, qPrintable(log));
        Run r = run({QStringLiteral("ps"), QStringLiteral("--port"), QString::number(port)});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QStringLiteral("no model loaded")), qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("stories-Q8_0")), qPrintable(r.out)); // served from the data folder
        p.terminate();
        QVERIFY(p.waitForFinished(20000));

        QTcpServer probe; // a port that was free a moment ago
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const quint16 freePort = probe.serverPort();
        probe.close();
        r = run({QStringLiteral("ps"), QStringLiteral("--port"), QString::number(freePort)});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains(QStringLiteral("no hearth-server is running")), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCliLibrary)
#include "test_cli_library.moc"
