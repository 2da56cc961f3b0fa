// `hearth-cli ls` and `hearth-cli rm`: the app's model library (the models folder plus the files
// referenced in <models>/.hearth-library.json) listed and pruned through app::ModelLibrary.
#include "library_context.h"

#include "services/model_library.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>

#include <cstdio>

namespace hearth::cli {

namespace {

const char* kLsHelp =
    "usage: hearth-cli ls [--data-dir DIR] [--paths]\n"
    "  The models in the library the app shows: the models folder of the data folder and the\n"
    "  files referenced where they lie. --paths adds each model's path.\n";
const char* kRmHelp =
    "usage: hearth-cli rm NAME|PATH... [--data-dir DIR]\n"
    "  Deletes a model of the models folder (all parts of a split model). A model referenced\n"
    "  where it lies is only forgotten: its file stays.\n";

// A scanned library (the scan waited for).
void scan(app::ModelLibrary& library) {
    QEventLoop loop;
    // modelsChanged comes only when the list changed; the end of the scan always comes.
    QObject::connect(&library, &app::ModelLibrary::scanningChanged, &loop, [&](bool scanning) {
        if (!scanning) loop.quit();
    });
    library.refresh();
    loop.exec();
}

// The entry a name or path means: a path to a listed file, the file name, or the file name
// without .gguf; null when none (or, for a name, more than one) fits.
const app::ModelEntry* resolve(const app::ModelLibrary& library, const QString& what, QString* error) {
    const QFileInfo asPath(what);
    if (asPath.exists()) {
        if (const app::ModelEntry* e = library.find(asPath.absoluteFilePath())) return e;
        for (const app::ModelEntry& e : library.models())
            if (QFileInfo(e.path).canonicalFilePath() == asPath.canonicalFilePath()) return &e;
    }
    QList<const app::ModelEntry*> hits;
    for (const app::ModelEntry& e : library.models()) {
        const QString stem = e.fileName.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive) ? e.fileName.chopped(5)
                                                                                               : e.fileName;
        if (e.fileName.compare(what, Qt::CaseInsensitive) == 0 || stem.compare(what, Qt::CaseInsensitive) == 0)
            hits << &e;
    }
    if (hits.size() == 1) return hits.first();
    if (hits.isEmpty()) *error = QStringLiteral("no model named %1 in the library (see hearth-cli ls)").arg(what);
    else *error = QStringLiteral("%1 names %2 models; give the path").arg(what).arg(hits.size());
    return nullptr;
}

} // namespace

int runLs(Args args) {
    LibraryContext context;
    std::vector<std::string_view> rest;
    bool paths = false;
    for (std::string_view a : args)
        if (a == "-h" || a == "--help") {
            std::fputs(kLsHelp, stdout);
            return 0;
        }
    if (!loadLibraryContext("ls", args, context, &rest)) return 2;
    for (std::string_view a : rest) {
        if (a == "--paths") paths = true;
        else {
            std::fprintf(stderr, "hearth-cli ls: unexpected argument '%.*s'\n%s", int(a.size()), a.data(), kLsHelp);
            return 2;
        }
    }
    return withQtCore([&]() -> int {
        app::ModelLibrary library(context.modelsFolder);
        scan(library);
        if (library.models().isEmpty()) {
            std::printf("no models in %s (get one with hearth-cli pull REPO)\n", qPrintable(context.modelsFolder));
            return 0;
        }
        std::printf("%-48s %-10s %-10s %-17s%s\n", "NAME", "QUANT", "SIZE", "MODIFIED", paths ? " PATH" : "");
        for (const app::ModelEntry& e : library.models()) {
            QString name = e.fileName;
            if (e.parts > 1) name += QStringLiteral(" (%1 parts)").arg(e.parts);
            if (e.external) name += QStringLiteral(" (ref)");
            const QString quant = e.isUsable() ? e.quantization : QStringLiteral("unreadable");
            std::printf("%-48s %-10s %-10s %-17s%s%s\n", qPrintable(name), qPrintable(quant),
                        qPrintable(formatSize(e.sizeBytes)),
                        qPrintable(e.modified.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))),
                        paths ? " " : "", paths ? qPrintable(e.path) : "");
        }
        return 0;
    });
}

int runRm(Args args) {
    LibraryContext context;
    std::vector<std::string_view> rest;
    for (std::string_view a : args)
        if (a == "-h" || a == "--help") {
            std::fputs(kRmHelp, stdout);
            return 0;
        }
    if (!loadLibraryContext("rm", args, context, &rest)) return 2;
    if (rest.empty()) {
        std::fputs(kRmHelp, stderr);
        return 2;
    }
    return withQtCore([&]() -> int {
        app::ModelLibrary library(context.modelsFolder);
        scan(library);
        int rc = 0;
        for (std::string_view a : rest) {
            const QString what = QString::fromUtf8(a.data(), qsizetype(a.size()));
            QString error;
            const app::ModelEntry* e = resolve(library, what, &error);
            if (!e) {
                std::fprintf(stderr, "hearth-cli rm: %s\n", qPrintable(error));
                rc = 1;
                continue;
            }
            const app::ModelEntry entry = *e; // removeModel rescans the list
            if (!library.removeModel(entry.path, &error)) {
                std::fprintf(stderr, "hearth-cli rm: %s\n", qPrintable(error));
                rc = 1;
                continue;
            }
            if (entry.external)
                std::printf("forgot %s; the file stays at %s\n", qPrintable(entry.fileName), qPrintable(entry.path));
            else
                std::printf("deleted %s (%s%s)\n", qPrintable(entry.fileName), qPrintable(formatSize(entry.sizeBytes)),
                            entry.parts > 1 ? qPrintable(QStringLiteral(", %1 parts").arg(entry.parts)) : "");
            scan(library);
        }
        return rc;
    });
}

} // namespace hearth::cli
