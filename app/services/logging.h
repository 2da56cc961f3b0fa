// The app's log: spdlog to a size-rotated file in the data folder (and to stderr), with Qt's own
// messages routed into it, so a user can attach one file to a bug report.
#pragma once

#include <QString>

#include <cstddef>

namespace hearth::app {

struct LogOptions {
    size_t maxFileBytes = size_t(5) << 20; // then hearth.log becomes hearth.1.log, ...
    size_t maxFiles = 3;                   // rotated files kept besides the current one
    bool toStderr = true;
};

// Makes the default logger write to DIR/logs/hearth.log (rotating) and stderr, and installs a Qt
// message handler that forwards qDebug/qInfo/qWarning/qCritical into it. Returns the log file's
// path, or an empty string when the folder cannot be written (logging then goes to stderr only).
QString setupLogging(const QString& dataDir, const LogOptions& options = {});

// Restores Qt's default message handler and spdlog's default logger (tests).
void shutdownLogging();

} // namespace hearth::app
