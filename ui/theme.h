// Light and dark themes: "system" keeps the desktop's style and palette, "light" and "dark" use
// Fusion with a palette of their own. Views take their colours from the palette, so a change of
// theme reaches them through QEvent::PaletteChange.
#pragma once

#include <QString>

class QPalette;

namespace hearth::ui {

// Applies "system", "light" or "dark" to the application (anything else: "system").
void applyTheme(const QString& name);
// The theme last applied ("system" before any).
QString currentTheme();
// Whether a palette reads as dark (light text on a dark window).
bool isDark(const QPalette& palette);

} // namespace hearth::ui
