// countText: a number with the singular or plural word that agrees with it.
#include "count_text.h"

#include <QLocale>

namespace hearth::ui {

QString countWord(qint64 n, const QString& singular, const QString& plural) { return n == 1 ? singular : plural; }

QString countText(qint64 n, const QString& singular, const QString& plural) {
    return QStringLiteral("%1 %2").arg(QLocale().toString(n), countWord(n, singular, plural));
}

} // namespace hearth::ui
