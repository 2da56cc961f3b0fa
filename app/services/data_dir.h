// The one data folder the desktop app, hearth-cli and the user service share: hearth.ini (and the
// secrets beside it), conversations.sqlite and, unless the settings name another, models/.
#pragma once

#include <QString>

namespace hearth::app {

// The folder named on the command line, else $HEARTH_DATA_DIR, else $XDG_DATA_HOME/hearth
// (~/.local/share/hearth): the folder the user service serves models from too.
QString resolveDataDir(const QString& commandLineValue = {});

// Where releases before the shared folder kept settings and chats (~/.local/share/Hearth/Hearth).
QString legacyDataDir();

// When `dataDir` was not chosen explicitly and has no settings yet while the legacy folder has
// them, moves the legacy files (hearth.ini, secrets, conversations.sqlite) into it. Returns a
// line for the log (empty when there was nothing to do).
QString migrateLegacyDataDir(const QString& dataDir);

} // namespace hearth::app
