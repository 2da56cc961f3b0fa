// `hearth-cli pull REPO[:QUANT|:FILE]`: lists the repository's GGUF files on the hub, picks one
// variant (Q4_K_M by default, else the nearest sensible one) and downloads all of its parts, and
// the vision projector paired with it, into the models folder with the app's DownloadManager
// (resumed .part files, SHA-256 checked), recording where each file came from.
#include "library_context.h"

#include "services/download_manager.h"
#include "services/hub_client.h"
#include "services/model_origins.h"

#include <QCoreApplication>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <cstring>
#include <optional>

namespace hearth::cli {

namespace {

const char* kPullHelp =
    "usage: hearth-cli pull REPO[:QUANT|:FILE] [--data-dir DIR] [--no-mmproj] [--json]\n"
    "  Downloads a GGUF model from the hub into the models folder of the data folder (the\n"
    "  library the app shows). QUANT picks a quantization (default Q4_K_M, else the nearest one\n"
    "  the repository has); FILE an exact .gguf name. A split model comes with all its parts,\n"
    "  and a vision model with its projector (the repository's mmproj file, F16 first) unless\n"
    "  --no-mmproj.\n"
    "  An interrupted download resumes; a file whose SHA-256 differs from the hub's is deleted\n"
    "  (exit 1). The hub is $HEARTH_HUB_URL, else the app's hub setting, else huggingface.co;\n"
    "  the data folder --data-dir, else $HEARTH_DATA_DIR, else ~/.local/share/hearth.\n"
    "  --json prints the progress as Ollama's pull does, one JSON object per line, ending in\n"
    "  {\"status\":\"success\"} or {\"error\":...,\"status\":HTTP status}.\n"
    "  REPO may carry Ollama's hf.co/ prefix (or huggingface.co/, or the repository's URL).\n"
    "  e.g. hearth-cli pull Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q8_0\n";

// Nearest first when the asked-for Q4_K_M is missing: similar size and quality, then larger
// (better) ones, then smaller ones.
const char* const kDefaultOrder[] = {"Q4_K_M", "Q4_K_S", "Q4_K",   "IQ4_XS", "IQ4_NL", "Q4_0",   "Q5_K_M",
                                     "Q5_K_S", "Q5_K",   "Q4_1",   "Q5_0",   "Q5_1",   "Q6_K",   "Q3_K_L",
                                     "Q3_K_M", "Q8_0",   "IQ3_M",  "IQ3_S",  "Q3_K_S", "IQ3_XS", "IQ3_XXS",
                                     "Q2_K",   "IQ2_M",  "F16",    "BF16",   "F32"};

QString optionList(const QList<app::QuantOption>& options) {
    QStringList names;
    for (const app::QuantOption& o : options)
        names << QStringLiteral("%1 (%2)").arg(o.quantization, formatSize(o.totalSize));
    return names.join(QStringLiteral(", "));
}

// The variant the selector names; nullopt with *error set when none fits.
std::optional<app::QuantOption> pick(const QList<app::QuantOption>& options, const QString& selector, QString* error) {
    if (options.isEmpty()) {
        *error = QStringLiteral("the repository has no GGUF model files");
        return std::nullopt;
    }
    if (selector.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) {
        for (const app::QuantOption& o : options) {
            if (o.name.compare(selector, Qt::CaseInsensitive) == 0 ||
                o.name.section(QLatin1Char('/'), -1).compare(selector, Qt::CaseInsensitive) == 0)
                return o;
            for (const app::HubFile& f : o.files)
                if (f.path.compare(selector, Qt::CaseInsensitive) == 0 ||
                    f.path.section(QLatin1Char('/'), -1).compare(selector, Qt::CaseInsensitive) == 0)
                    return o;
        }
        *error = QStringLiteral("the repository has no file named %1; it has: %2").arg(selector, optionList(options));
        return std::nullopt;
    }
    if (!selector.isEmpty()) {
        for (const app::QuantOption& o : options)
            if (o.quantization.compare(selector, Qt::CaseInsensitive) == 0) return o;
        *error = QStringLiteral("the repository has no %1 file; it has: %2").arg(selector.toUpper(), optionList(options));
        return std::nullopt;
    }
    for (const char* q : kDefaultOrder)
        for (const app::QuantOption& o : options)
            if (o.quantization.compare(QLatin1String(q), Qt::CaseInsensitive) == 0 && o.isComplete()) return o;
    for (const app::QuantOption& o : options)
        if (o.isComplete()) return o; // smallest first: something the machine is likeliest to run
    return options.first();
}

// What pull tells the user: progress redrawn in place on a terminal, a line every 10% otherwise;
// with --json, Ollama's pull progress as one JSON object per line on stdout (what hearth-server's
// /api/pull relays), ending in {"status":"success"} or {"error":...,"status":HTTP status}.
class PullOutput {
public:
    PullOutput(bool terminal, bool json) : m_terminal(terminal), m_json(json) {}
    bool json() const { return m_json; }
    void line(const QString& text) { // a plain message, text mode only
        if (m_json) return;
        std::printf("%s\n", qPrintable(text));
        std::fflush(stdout);
    }
    void status(const QString& status) { emitJson(QJsonObject{{QStringLiteral("status"), status}}); }
    void start(const QString& name, const QString& sha256, qint64 onDisk, qint64 total) {
        m_name = name;
        m_digest = sha256.isEmpty() ? QString() : QStringLiteral("sha256:") + sha256;
        m_lastStep = -1;
        if (m_json) return update(onDisk, total, 0.0);
        if (onDisk > 0)
            std::printf("resuming %s at %s of %s\n", qPrintable(name), qPrintable(formatSize(onDisk)),
                        qPrintable(formatSize(total)));
        else
            std::printf("pulling %s (%s)\n", qPrintable(name), qPrintable(formatSize(total)));
        std::fflush(stdout);
    }
    void update(qint64 received, qint64 total, double speed) {
        if (total <= 0) return;
        const int percent = int(received * 100 / total);
        if (m_json) { // a line per percent
            if (percent == m_lastStep) return;
            m_lastStep = percent;
            QJsonObject o{{QStringLiteral("status"), QStringLiteral("pulling ") + m_name},
                          {QStringLiteral("total"), double(total)},
                          {QStringLiteral("completed"), double(received)}};
            if (!m_digest.isEmpty()) o.insert(QStringLiteral("digest"), m_digest);
            return emitJson(o);
        }
        if (m_terminal) {
            std::printf("\r%s %3d%% %s / %s  %s/s   ", qPrintable(m_name), percent, qPrintable(formatSize(received)),
                        qPrintable(formatSize(total)), qPrintable(formatSize(qint64(speed))));
        } else {
            const int decile = percent / 10;
            if (decile == m_lastStep) return;
            m_lastStep = decile;
            std::printf("%s %d%% (%s of %s)\n", qPrintable(m_name), percent, qPrintable(formatSize(received)),
                        qPrintable(formatSize(total)));
        }
        std::fflush(stdout);
    }
    void endLine() {
        if (m_terminal && !m_json) std::printf("\n");
        std::fflush(stdout);
    }
    // A failure: on stderr, and with --json as the last line with the HTTP status it stands for.
    int fail(int httpStatus, const QString& message, int exitCode = 1) {
        std::fprintf(stderr, "hearth-cli pull: %s\n", qPrintable(message));
        emitJson(QJsonObject{{QStringLiteral("error"), message}, {QStringLiteral("status"), httpStatus}});
        return exitCode;
    }

private:
    void emitJson(const QJsonObject& o) {
        if (!m_json) return;
        std::printf("%s\n", QJsonDocument(o).toJson(QJsonDocument::Compact).constData());
        std::fflush(stdout);
    }

    bool m_terminal;
    bool m_json;
    QString m_name;
    QString m_digest;
    int m_lastStep = -1;
};

// Lists the repository's files; nullopt (message printed) on an error.
std::optional<QList<app::HubFile>> listRepository(const LibraryContext& context, const QString& repo, PullOutput& out) {
    app::HubClient hub;
    hub.setBaseUrl(context.hubUrl);
    if (!context.hubToken.isEmpty()) hub.setAccessToken(context.hubToken);
    QEventLoop loop;
    std::optional<QList<app::HubFile>> result;
    QString failure;
    QObject::connect(&hub, &app::HubClient::filesListed, &loop,
                     [&](quint64, const QString&, const QList<app::HubFile>& files) {
                         result = files;
                         loop.quit();
                     });
    QObject::connect(&hub, &app::HubClient::failed, &loop, [&](quint64, const QString& message) {
        failure = message;
        loop.quit();
    });
    hub.listFiles(repo);
    loop.exec();
    if (!result)
        out.fail(failure.contains(QStringLiteral("404")) ? 404 : 502,
                 repo + QStringLiteral(": ") + (failure.isEmpty() ? QStringLiteral("no answer from the hub") : failure));
    return result;
}

// Downloads one file to `destination`; true when it is there, verified.
bool download(app::DownloadManager& downloads, const LibraryContext& context, const QString& repo,
              const app::HubFile& file, const QString& destination, PullOutput& printer) {
    app::HubClient urls; // only for downloadUrl
    urls.setBaseUrl(context.hubUrl);
    app::DownloadRequest request;
    request.url = urls.downloadUrl(repo, file.path);
    request.destination = destination;
    request.expectedSha256 = file.sha256;
    request.expectedSize = file.size > 0 ? file.size : -1;
    request.displayName = QFileInfo(destination).fileName();
    printer.start(request.displayName, file.sha256, QFileInfo(destination + QStringLiteral(".part")).size(), file.size);

    QEventLoop loop;
    bool ok = false;
    QString failure;
    quint64 id = 0;
    QObject::connect(&downloads, &app::DownloadManager::progress, &loop,
                     [&](quint64 which, qint64 received, qint64 total, double speed, int) {
                         if (which == id) printer.update(received, total, speed);
                     });
    QObject::connect(&downloads, &app::DownloadManager::retrying, &loop,
                     [&](quint64 which, int attempt, int delayMs, const QString& reason) {
                         if (which != id) return;
                         printer.endLine();
                         std::fprintf(stderr, "hearth-cli pull: %s; retry %d in %.1f s\n", qPrintable(reason), attempt,
                                      delayMs / 1000.0);
                         printer.status(QStringLiteral("retrying: ") + reason);
                     });
    QObject::connect(&downloads, &app::DownloadManager::completed, &loop, [&](quint64 which, const QString&) {
        if (which != id) return;
        ok = true;
        loop.quit();
    });
    QObject::connect(&downloads, &app::DownloadManager::failed, &loop, [&](quint64 which, const QString& message) {
        if (which != id) return;
        failure = message;
        loop.quit();
    });
    id = downloads.enqueue(request);
    loop.exec();
    printer.update(ok ? file.size : 0, ok ? file.size : 0, 0.0);
    printer.endLine();
    if (!ok) {
        // A failed transfer keeps its .part for the next try; a corrupt one is deleted already.
        printer.fail(502, failure);
        return false;
    }
    printer.status(QStringLiteral("verifying sha256 digest"));
    printer.line(QStringLiteral("verified %1 (sha256 %2)")
                     .arg(request.displayName, file.sha256.isEmpty() ? QStringLiteral("not published")
                                                                     : file.sha256.left(16) + QStringLiteral("...")));
    return true;
}

} // namespace

int runPull(Args args) {
    LibraryContext context;
    std::vector<std::string_view> rest;
    std::vector<std::string_view> kept;
    bool withProjector = true;
    bool json = false;
    for (std::string_view a : args) {
        if (a == "-h" || a == "--help") {
            std::fputs(kPullHelp, stdout);
            return 0;
        }
        if (a == "--no-mmproj") withProjector = false;
        else if (a == "--json") json = true;
        else kept.push_back(a);
    }
    if (!loadLibraryContext("pull", Args(kept.data(), kept.size()), context, &rest)) return 2;
    if (rest.size() != 1 || (!rest[0].empty() && rest[0][0] == '-')) {
        std::fputs(kPullHelp, stderr);
        return 2;
    }
    QString spec = QString::fromUtf8(rest[0].data(), qsizetype(rest[0].size()));
    // Ollama's way of naming a hub model ("hf.co/owner/repo:Q4_K_M"), and the repository's URL.
    for (const char* host : {"https://huggingface.co/", "https://hf.co/", "huggingface.co/", "hf.co/"})
        if (spec.startsWith(QLatin1String(host), Qt::CaseInsensitive)) {
            spec.remove(0, qsizetype(std::strlen(host)));
            break;
        }
    const QString repo = spec.section(QLatin1Char(':'), 0, 0);
    const QString selector = spec.section(QLatin1Char(':'), 1);
    return withQtCore([&]() -> int {
        PullOutput out(stdoutIsTerminal(), json);
        if (!app::HubClient::isValidRepoId(repo))
            return out.fail(400, QStringLiteral("'%1' is not a repository id (owner/name)").arg(repo), 2);
        out.status(QStringLiteral("pulling manifest"));
        const auto files = listRepository(context, repo, out);
        if (!files) return 1;
        QString error;
        const auto chosen = pick(app::HubClient::groupByQuantization(*files), selector, &error);
        if (!chosen) return out.fail(404, repo + QStringLiteral(": ") + error);
        if (!chosen->isComplete())
            return out.fail(404, QStringLiteral("%1: %2 has %3 of its %4 parts on the hub")
                                     .arg(repo, chosen->name)
                                     .arg(chosen->files.size())
                                     .arg(chosen->partCount));
        if (!QDir().mkpath(context.modelsFolder))
            return out.fail(500, QStringLiteral("cannot create ") + context.modelsFolder);
        out.line(QStringLiteral("%1: %2, %3 in %4 file%5 -> %6")
                     .arg(repo, chosen->quantization, formatSize(chosen->totalSize))
                     .arg(chosen->files.size())
                     .arg(chosen->files.size() == 1 ? QString() : QStringLiteral("s"), context.modelsFolder));
        app::DownloadManager downloads;
        if (!context.hubToken.isEmpty()) downloads.setAccessToken(context.hubToken, context.hubUrl.host());
        QString first;
        QHash<QString, app::ModelOrigin> origins;
        auto there = [](const QString& destination, const app::HubFile& f) {
            return QFileInfo(destination).isFile() && (f.size <= 0 || QFileInfo(destination).size() == f.size);
        };
        auto alreadyThere = [&](const QString& destination, const app::HubFile& f, const QString& what) {
            const QString name = QFileInfo(destination).fileName();
            out.start(name, f.sha256, f.size, f.size);
            out.line(name + what + QStringLiteral(" is there already"));
        };
        for (const app::HubFile& f : chosen->files) {
            const QString destination = QDir(context.modelsFolder).filePath(f.path.section(QLatin1Char('/'), -1));
            if (first.isEmpty()) first = destination;
            origins.insert(QFileInfo(destination).fileName(), {repo, f.path, f.sha256, f.size, chosen->projector});
            if (there(destination, f)) {
                alreadyThere(destination, f, QString());
                continue;
            }
            if (!download(downloads, context, repo, f, destination, out)) return 1;
        }
        if (withProjector && chosen->hasProjector()) {
            // Repositories name their projectors alike ("mmproj-F16.gguf"): another repository's
            // file of that name stays, and this one takes the repository's name before it.
            const app::HubFile& p = chosen->projector;
            const QString name = p.path.section(QLatin1Char('/'), -1);
            QString destination = QDir(context.modelsFolder).filePath(name);
            QHash<QString, app::ModelOrigin> known;
            app::readModelOrigins(context.modelsFolder, &known);
            const auto mine = known.constFind(name);
            const bool ours = mine != known.cend() && mine->repo == repo && mine->repoPath == p.path;
            if (QFileInfo(destination).isFile() && !ours && !there(destination, p))
                destination = QDir(context.modelsFolder)
                                  .filePath(repo.section(QLatin1Char('/'), -1) + QLatin1Char('-') + name);
            origins.insert(QFileInfo(destination).fileName(), {repo, p.path, p.sha256, p.size, {}});
            if (there(destination, p))
                alreadyThere(destination, p, QStringLiteral(" (vision projector)"));
            else if (!download(downloads, context, repo, p, destination, out))
                return 1;
        }
        out.status(QStringLiteral("writing manifest"));
        QString originsError;
        if (!app::recordModelOrigins(context.modelsFolder, origins, &originsError))
            std::fprintf(stderr, "hearth-cli pull: could not record where the files came from: %s\n",
                         qPrintable(originsError));
        out.line(QStringLiteral("success: ") + first);
        if (json)
            std::printf("%s\n", QJsonDocument(QJsonObject{{QStringLiteral("status"), QStringLiteral("success")},
                                                            {QStringLiteral("path"), first}})
                                     .toJson(QJsonDocument::Compact)
                                     .constData());
        return 0;
    });
}

} // namespace hearth::cli
