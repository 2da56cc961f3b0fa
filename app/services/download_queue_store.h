// The download queue kept on disk (a small JSON file in the data folder) so that unfinished
// downloads continue after a restart: each one's URL, destination, SHA-256, size, name and
// whether the user paused it.
#pragma once

#include "services/download_manager.h"

#include <QList>
#include <QString>

namespace hearth::app {

struct QueuedDownload {
    DownloadRequest request;
    bool paused = false;
    bool operator==(const QueuedDownload& o) const {
        return request.url == o.request.url && request.destination == o.request.destination &&
               request.expectedSha256 == o.request.expectedSha256 && request.expectedSize == o.request.expectedSize &&
               request.displayName == o.request.displayName && paused == o.paused;
    }
};

// Reads the queue; a missing file is an empty queue. False with *error for an unreadable or
// malformed file (entries without a URL or destination are skipped).
bool readDownloadQueue(const QString& path, QList<QueuedDownload>* out, QString* error = nullptr);
// Writes it atomically (a temporary file renamed over the old one).
bool writeDownloadQueue(const QString& path, const QList<QueuedDownload>& queue, QString* error = nullptr);

} // namespace hearth::app
