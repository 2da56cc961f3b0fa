// Reading and writing the app's small JSON files whole (download queue, model origins, library
// references, provider list): a missing file reads as empty, a damaged one is an error naming it,
// and writes go through QSaveFile, so that a crash leaves the old file or the new one.
#pragma once

#include <QJsonObject>
#include <QString>

namespace hearth::app {

// Reads the JSON object in path into *out (cleared first). A missing file: true, *out empty.
// Unreadable, or not a JSON object: false, and *error (if given) says why, as "PATH is not WHAT".
bool readJsonObjectFile(const QString& path, const QString& what, QJsonObject* out, QString* error);

// Writes root to path through QSaveFile, creating its folder. False and *error on failure.
bool writeJsonObjectFile(const QString& path, const QJsonObject& root, QString* error);

} // namespace hearth::app
