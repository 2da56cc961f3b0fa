// The app's rotating log file: spdlog lines and Qt messages land in DATA/logs/hearth.log, files
// rotate at the size limit keeping the configured count, and an unwritable folder falls back to
// stderr without failing.
#include "services/logging.h"

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <spdlog/spdlog.h>

using namespace hearth::app;

class TestLogging : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void writesAndRotates() {
        QTemporaryDir dir;
        LogOptions o;
        o.maxFileBytes = 4096;
        o.maxFiles = 2;
        o.toStderr = false;
        const QString path = setupLogging(dir.path(), o);
        QCOMPARE(path, dir.filePath(QStringLiteral("logs/hearth.log")));
        qWarning("hello from qt %d", 42);
        spdlog::default_logger()->flush();
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray first = f.readAll();
        QVERIFY2(first.contains("[warning]") && first.contains("qt: hello from qt 42"), first.constData());
        f.close();
        for (int i = 0; i < 300; ++i) spdlog::info("line {} {}", i, std::string(80, 'x'));
        spdlog::default_logger()->flush();
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("logs/hearth.1.log"))));
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("logs/hearth.2.log"))));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("logs/hearth.3.log"))));
        QVERIFY(QFileInfo(path).size() <= 4096);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().contains("line 299"));
        shutdownLogging();
    }

    void unwritableFolderFallsBackToStderr() {
        const QString path = setupLogging(QStringLiteral("/proc/hearth-no-such-dir"));
        QVERIFY(path.isEmpty());
        spdlog::info("still logging");
        shutdownLogging();
    }
};

QTEST_GUILESS_MAIN(TestLogging)
#include "test_logging.moc"
