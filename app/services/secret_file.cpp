// Owner-only secret files: QSaveFile with its permissions set before the write.
#include "services/secret_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <spdlog/spdlog.h>

namespace hearth::app {

namespace {
constexpr QFileDevice::Permissions kOwnerOnly = QFileDevice::ReadOwner | QFileDevice::WriteOwner;
}

bool writeSecretFile(const QString& path, const QString& value, QString* error) {
    auto fail = [error](const QString& why) {
        if (error) *error = why;
        return false;
    };
    const QString trimmed = value.trimmed();
    if (trimmed.isEmpty()) {
        if (QFile::exists(path) && !QFile::remove(path)) return fail(QStringLiteral("cannot delete %1").arg(path));
        return true;
    }
    if (!QDir().mkpath(QFileInfo(path).absolutePath()))
        return fail(QStringLiteral("cannot create the folder of %1").arg(path));
    // The temporary file is owner-only before the secret goes in; the rename keeps that.
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || !f.setPermissions(kOwnerOnly) || f.write(trimmed.toUtf8()) < 0 ||
        !f.commit()) {
        const QString why = QStringLiteral("cannot write %1: %2").arg(path, f.errorString());
        f.cancelWriting();
        return fail(why);
    }
    QFile::setPermissions(path, kOwnerOnly);
    return true;
}

QString readSecretFile(const QString& path) {
    QFile f(path);
    if (!f.exists()) return {};
    // Someone widened the permissions: narrow them again before reading.
    if ((f.permissions() & ~(kOwnerOnly | QFileDevice::ReadUser | QFileDevice::WriteUser)) != 0) {
        spdlog::warn("{} was readable by others; making it owner-only", path.toStdString());
        f.setPermissions(kOwnerOnly);
    }
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll()).trimmed();
}

} // namespace hearth::app
