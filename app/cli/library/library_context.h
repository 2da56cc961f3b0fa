// What the library commands of hearth-cli (pull, ls, rm) share with the desktop app: the data
// folder, its settings (models folder, hub address, hub token) and a Qt event loop to wait in.
#pragma once

#include "../commands.h"

#include <QString>
#include <QUrl>

#include <functional>
#include <string>
#include <vector>

namespace hearth::cli {

struct LibraryContext {
    QString dataDir;      // --data-dir, else $HEARTH_DATA_DIR, else ~/.local/share/hearth
    QString modelsFolder; // the models/folder setting of <dataDir>/hearth.ini, else <dataDir>/models
    QUrl hubUrl;          // $HEARTH_HUB_URL, else the hub/baseUrl setting, else https://huggingface.co
    QString hubToken;     // the app's hub-token file beside hearth.ini
};

// Takes "--data-dir DIR" out of `args` (the rest in *rest) and reads the settings. False with a
// message printed when the option has no value.
bool loadLibraryContext(const char* command, Args args, LibraryContext& context, std::vector<std::string_view>* rest);

// Runs `body` inside a QCoreApplication (created here, so the other commands stay Qt-free).
int withQtCore(const std::function<int()>& body);

// "4.1 GB", "260.0 MB", "1.2 kB" (decimal units, as Ollama prints them).
QString formatSize(qint64 bytes);

// Whether stdout is a terminal (progress redrawn in place) or a pipe/file (plain lines).
bool stdoutIsTerminal();

} // namespace hearth::cli
