// Data folder, settings and Qt event loop for hearth-cli's library commands.
#include "library_context.h"

#include "services/data_dir.h"
#include "services/settings.h"

#include <QCoreApplication>
#include <QDir>

#include <cstdio>
#include <unistd.h>

namespace hearth::cli {

bool loadLibraryContext(const char* command, Args args, LibraryContext& context, std::vector<std::string_view>* rest) {
    QString dataDirArg;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--data-dir") {
            if (i + 1 >= args.size() || args[i + 1].empty()) {
                std::fprintf(stderr, "hearth-cli %s: --data-dir needs a folder\n", command);
                return false;
            }
            dataDirArg = QString::fromUtf8(args[i + 1].data(), qsizetype(args[i + 1].size()));
            ++i;
        } else if (rest) {
            rest->push_back(args[i]);
        }
    }
    context.dataDir = app::resolveDataDir(dataDirArg);
    app::Settings settings(QDir(context.dataDir).filePath(QStringLiteral("hearth.ini")));
    context.modelsFolder = QDir::cleanPath(settings.modelsFolder());
    const QString hubEnv = qEnvironmentVariable("HEARTH_HUB_URL").trimmed();
    context.hubUrl = hubEnv.isEmpty() ? settings.hubBaseUrl() : QUrl(hubEnv);
    if (!context.hubUrl.isValid() || context.hubUrl.host().isEmpty()) {
        std::fprintf(stderr, "hearth-cli %s: the hub address '%s' is not a URL\n", command,
                     qPrintable(context.hubUrl.toString()));
        return false;
    }
    context.hubToken = settings.accessToken().trimmed();
    return true;
}

int withQtCore(const std::function<int()>& body) {
    static int argc = 1;
    static char name[] = "hearth-cli";
    static char* argv[] = {name, nullptr};
    QCoreApplication app(argc, argv);
    return body();
}

QString formatSize(qint64 bytes) {
    const double b = double(bytes);
    if (b >= 1e9) return QStringLiteral("%1 GB").arg(b / 1e9, 0, 'f', 1);
    if (b >= 1e6) return QStringLiteral("%1 MB").arg(b / 1e6, 0, 'f', 1);
    if (b >= 1e3) return QStringLiteral("%1 kB").arg(b / 1e3, 0, 'f', 1);
    return QStringLiteral("%1 B").arg(bytes);
}

bool stdoutIsTerminal() { return ::isatty(STDOUT_FILENO) == 1; }

} // namespace hearth::cli
