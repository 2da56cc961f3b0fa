// The palettes of the light and dark themes, and the desktop's own kept to go back to.
#include "theme.h"

#include <QApplication>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

#include <optional>

namespace hearth::ui {

namespace {

struct SystemLook {
    QPalette palette;
    QString style;
};

std::optional<SystemLook>& systemLook() {
    static std::optional<SystemLook> look;
    return look;
}

QString& themeName() {
    static QString name = QStringLiteral("system");
    return name;
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(0x2b, 0x2d, 0x31), base(0x1f, 0x21, 0x24), text(0xe6, 0xe6, 0xe6);
    const QColor accent(0x3d, 0x8e, 0xd9);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8d, 0x93));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xf5));
    p.setColor(QPalette::LinkVisited, QColor(0xb3, 0x9d, 0xf0));
    p.setColor(QPalette::Highlight, accent);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Light, QColor(0x3a, 0x3d, 0x42));
    p.setColor(QPalette::Midlight, QColor(0x34, 0x37, 0x3c));
    p.setColor(QPalette::Mid, QColor(0x24, 0x26, 0x29));
    p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
    p.setColor(QPalette::Shadow, Qt::black);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x7a, 0x7d, 0x82));
    p.setColor(QPalette::Disabled, QPalette::Base, window);
    return p;
}

QPalette lightPalette() {
    QPalette p;
    const QColor window(0xf3, 0xf4, 0xf6), base(Qt::white), text(0x1d, 0x1f, 0x23);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0xf7, 0xf8, 0xfa));
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8a, 0x8d, 0x93));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0xfa, 0xfa, 0xfb));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Link, QColor(0x1a, 0x6f, 0xc4));
    p.setColor(QPalette::Highlight, QColor(0x2f, 0x7f, 0xd8));
    p.setColor(QPalette::HighlightedText, Qt::white);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x9a, 0x9d, 0xa2));
    return p;
}

} // namespace

void applyTheme(const QString& name) {
    auto* app = qobject_cast<QApplication*>(QApplication::instance());
    if (!app) return;
    std::optional<SystemLook>& look = systemLook();
    if (!look) look = SystemLook{QApplication::palette(), app->style()->name()};
    const QString theme = name == QStringLiteral("light") || name == QStringLiteral("dark") ? name : QStringLiteral("system");
    themeName() = theme;
    if (theme == QStringLiteral("system")) {
        if (QStyle* s = QStyleFactory::create(look->style)) QApplication::setStyle(s);
        QApplication::setPalette(look->palette);
        return;
    }
    if (QStyle* s = QStyleFactory::create(QStringLiteral("Fusion"))) QApplication::setStyle(s);
    QApplication::setPalette(theme == QStringLiteral("dark") ? darkPalette() : lightPalette());
}

QString currentTheme() { return themeName(); }

bool isDark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

} // namespace hearth::ui
