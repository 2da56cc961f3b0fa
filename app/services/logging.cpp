// Rotating file logging for the app with Qt messages forwarded to spdlog.
#include "services/logging.h"

#include <QDir>
#include <QtGlobal>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <vector>

namespace hearth::app {

namespace {

void forwardQtMessage(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    const std::string text = message.toStdString();
    const char* category = context.category && std::string_view(context.category) != "default" ? context.category : nullptr;
    const std::string line = category ? std::string(category) + ": " + text : text;
    switch (type) {
    case QtDebugMsg: spdlog::debug("qt: {}", line); break;
    case QtInfoMsg: spdlog::info("qt: {}", line); break;
    case QtWarningMsg: spdlog::warn("qt: {}", line); break;
    case QtCriticalMsg: spdlog::error("qt: {}", line); break;
    case QtFatalMsg:
        spdlog::critical("qt: {}", line);
        spdlog::default_logger()->flush();
        break;
    }
}

} // namespace

QString setupLogging(const QString& dataDir, const LogOptions& options) {
    std::vector<spdlog::sink_ptr> sinks;
    if (options.toStderr) sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    QString path;
    const QString dir = QDir(dataDir).filePath(QStringLiteral("logs"));
    if (QDir().mkpath(dir)) {
        path = QDir(dir).filePath(QStringLiteral("hearth.log"));
        try {
            sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
                path.toStdString(), options.maxFileBytes, options.maxFiles));
        } catch (const spdlog::spdlog_ex& e) {
            // Unwritable file: keep stderr only, and say so there.
            path.clear();
            std::fprintf(stderr, "hearth: cannot write the log file: %s\n", e.what());
        }
    }
    auto logger = std::make_shared<spdlog::logger>("hearth", sinks.begin(), sinks.end());
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%l] [t%t] %v");
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    spdlog::flush_every(std::chrono::seconds(2));
    qInstallMessageHandler(forwardQtMessage);
    if (!path.isEmpty()) spdlog::info("log file: {}", path.toStdString());
    return path;
}

void shutdownLogging() {
    qInstallMessageHandler(nullptr);
    if (auto logger = spdlog::default_logger()) logger->flush();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "hearth-stderr", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
}

} // namespace hearth::app
