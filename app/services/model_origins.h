// Where the files in a models folder came from on the hub (repository, path, SHA-256, size, and
// the vision projector the repository offered), kept in <models folder>/.hearth-origins.json.
#pragma once

#include "services/hub_client.h"

#include <QHash>
#include <QString>

namespace hearth::app {

struct ModelOrigin {
    QString repo;     // "owner/name"; empty: not known
    QString repoPath; // the file's path inside the repository
    QString sha256;   // as the hub listed it; empty when it listed none
    qint64 size = 0;
    // The projector the repository had to pair with it when it was downloaded (empty path: none;
    // also recorded for a projector file itself, which pairs with nothing).
    HubFile projector;
    bool isKnown() const { return !repo.isEmpty(); }
};

// <modelsFolder>/.hearth-origins.json
QString modelOriginsFile(const QString& modelsFolder);

// The origins recorded for the folder's files, by file name ("model-Q4_K_M.gguf"). A missing
// file is no origins; false with *error for an unreadable or malformed one.
bool readModelOrigins(const QString& modelsFolder, QHash<QString, ModelOrigin>* out, QString* error = nullptr);
// Adds (or replaces) the origins of `files` (by file name) and writes the file atomically.
bool recordModelOrigins(const QString& modelsFolder, const QHash<QString, ModelOrigin>& files,
                        QString* error = nullptr);

} // namespace hearth::app
