// Count texts for the UI ("1 repository", "3 repositories"): the number and the word in the
// form that agrees with it, so no view prints "1 repositories" or "model(s)".
#pragma once

#include <QString>

namespace hearth::ui {

// "1 repository", "0 repositories", "12 repositories" (the number in the current locale).
QString countText(qint64 n, const QString& singular, const QString& plural);
// The word alone, in the form that agrees with n ("was"/"were", "image"/"images").
QString countWord(qint64 n, const QString& singular, const QString& plural);

} // namespace hearth::ui
