// Data folder resolution and the one-time move from the pre-1.0 location.
#include "services/data_dir.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStringList>

namespace hearth::app {

QString resolveDataDir(const QString& commandLineValue) {
    if (!commandLineValue.trimmed().isEmpty()) return QDir::cleanPath(commandLineValue.trimmed());
    const QString env = qEnvironmentVariable("HEARTH_DATA_DIR").trimmed();
    if (!env.isEmpty()) return QDir::cleanPath(env);
    QString base = qEnvironmentVariable("XDG_DATA_HOME").trimmed();
    if (base.isEmpty() || !QDir::isAbsolutePath(base)) base = QDir::homePath() + QStringLiteral("/.local/share");
    return QDir::cleanPath(base + QStringLiteral("/hearth"));
}

QString legacyDataDir() {
    QString base = qEnvironmentVariable("XDG_DATA_HOME").trimmed();
    if (base.isEmpty() || !QDir::isAbsolutePath(base)) base = QDir::homePath() + QStringLiteral("/.local/share");
    return QDir::cleanPath(base + QStringLiteral("/Hearth/Hearth"));
}

QString migrateLegacyDataDir(const QString& dataDir) {
    const QDir legacy(legacyDataDir());
    const QDir target(dataDir);
    if (QDir::cleanPath(legacy.absolutePath()) == QDir::cleanPath(target.absolutePath())) return {};
    if (!legacy.exists(QStringLiteral("hearth.ini")) || target.exists(QStringLiteral("hearth.ini"))) return {};
    if (!QDir().mkpath(target.absolutePath())) return {};
    QStringList moved;
    for (const QString& name : {QStringLiteral("hearth.ini"), QStringLiteral("hub-token"),
                                QStringLiteral("server-api-key"), QStringLiteral("conversations.sqlite"),
                                QStringLiteral("conversations.sqlite-wal"), QStringLiteral("conversations.sqlite-shm")}) {
        if (!legacy.exists(name) || target.exists(name)) continue;
        if (QFile::rename(legacy.filePath(name), target.filePath(name))) moved << name;
    }
    if (moved.isEmpty()) return {};
    return QStringLiteral("moved %1 from %2 to %3")
        .arg(moved.join(QStringLiteral(", ")), legacy.absolutePath(), target.absolutePath());
}

} // namespace hearth::app
