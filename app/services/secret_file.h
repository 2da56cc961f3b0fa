// Secrets kept in files only their owner may read or write (0600): the hub token, the server's
// API key, remote providers' keys where no keyring takes them.
#pragma once

#include <QString>

namespace hearth::app {

// Writes `value` to `path` (creating its folder) through a temporary file that is owner-only
// before the secret goes in; an empty value deletes the file. False with the reason in *error.
bool writeSecretFile(const QString& path, const QString& value, QString* error);

// The file's trimmed text ("" when absent or unreadable). A file others may read is narrowed to
// owner-only first (with a warning in the log).
QString readSecretFile(const QString& path);

} // namespace hearth::app
