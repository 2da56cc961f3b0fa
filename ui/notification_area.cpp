// NotificationArea: one row per notification (coloured by level, a close button, a repeat count),
// on a panel of its own that floats over its parent.
#include "notification_area.h"

#include <QEvent>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

namespace hearth::ui {

namespace {

const char* levelName(NotificationArea::Level level) {
    switch (level) {
    case NotificationArea::Level::Error: return "error";
    case NotificationArea::Level::Warning: return "warning";
    case NotificationArea::Level::Info: break;
    }
    return "info";
}

// Tints readable on light and dark palettes.
QString rowStyle(NotificationArea::Level level) {
    switch (level) {
    case NotificationArea::Level::Error:
        return QStringLiteral("QFrame#note { background: rgba(192,57,43,0.16); border: 1px solid rgba(192,57,43,0.6); border-radius: 4px; }");
    case NotificationArea::Level::Warning:
        return QStringLiteral("QFrame#note { background: rgba(211,142,0,0.16); border: 1px solid rgba(211,142,0,0.6); border-radius: 4px; }");
    case NotificationArea::Level::Info: break;
    }
    return QStringLiteral("QFrame#note { background: rgba(41,128,185,0.12); border: 1px solid rgba(41,128,185,0.45); border-radius: 4px; }");
}

} // namespace

NotificationArea::NotificationArea(QWidget* parent) : QWidget(parent) {
    m_layout = new QVBoxLayout(this);
    m_layout->setContentsMargins(4, 4, 4, 4);
    m_layout->setSpacing(3);
    // Opaque over the page below it.
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Window);
    if (parent) parent->installEventFilter(this);
    setVisible(false);
}

void NotificationArea::setAnchor(QWidget* widget) {
    if (m_anchor) m_anchor->removeEventFilter(this);
    m_anchor = widget;
    if (widget) widget->installEventFilter(this);
    place();
}

bool NotificationArea::eventFilter(QObject* watched, QEvent* event) {
    const QEvent::Type t = event->type();
    const bool geometry = t == QEvent::Resize || t == QEvent::Move || t == QEvent::Show || t == QEvent::Hide;
    if ((watched == parentWidget() && (geometry || t == QEvent::LayoutRequest)) || (watched == m_anchor && geometry))
        place();
    return QWidget::eventFilter(watched, event);
}

void NotificationArea::place() {
    QWidget* over = parentWidget();
    if (!over || m_layout->count() == 0) return;
    const int width = std::max(120, std::min(over->width() - 2 * kMargin, kMaxWidth));
    int top = kMargin;
    if (m_anchor && m_anchor->isVisible() && over->isAncestorOf(m_anchor))
        top = std::max(top, m_anchor->mapTo(over, QPoint(0, m_anchor->height())).y() + kMargin / 2);
    m_layout->activate();
    const int height = std::min(m_layout->hasHeightForWidth() ? m_layout->heightForWidth(width) : sizeHint().height(),
                                std::max(0, over->height() - top - kMargin));
    setGeometry(over->width() - width - kMargin, top, width, height);
    raise();
}

void NotificationArea::notify(Level level, const QString& text) {
    const QString t = text.trimmed();
    if (t.isEmpty()) return;
    // A repeat of a notification still shown counts on it.
    for (int i = 0; i < m_layout->count(); ++i) {
        QWidget* row = m_layout->itemAt(i)->widget();
        if (!row || row->property("text").toString() != t || row->property("level").toInt() != int(level)) continue;
        const int n = row->property("count").toInt() + 1;
        row->setProperty("count", n);
        if (auto* label = row->findChild<QLabel*>(QStringLiteral("text")))
            label->setText(QStringLiteral("%1  (×%2)").arg(t.toHtmlEscaped()).arg(n));
        Q_EMIT changed();
        return;
    }
    // Too many: the oldest information goes first, then the oldest of any kind.
    while (m_layout->count() >= kMaxShown) {
        QWidget* victim = nullptr;
        for (int i = 0; i < m_layout->count() && !victim; ++i) {
            QWidget* row = m_layout->itemAt(i)->widget();
            if (row && row->property("level").toInt() == int(Level::Info)) victim = row;
        }
        if (!victim) victim = m_layout->itemAt(0)->widget();
        remove(victim);
    }
    auto* row = new QFrame(this);
    row->setObjectName(QStringLiteral("note"));
    row->setStyleSheet(rowStyle(level));
    row->setProperty("text", t);
    row->setProperty("level", int(level));
    row->setProperty("count", 1);
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(8, 3, 3, 3);
    auto* label = new QLabel(t.toHtmlEscaped(), row);
    label->setObjectName(QStringLiteral("text"));
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* close = new QToolButton(row);
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss"));
    layout->addWidget(label, 1);
    layout->addWidget(close);
    m_layout->addWidget(row);
    connect(close, &QToolButton::clicked, this, [this, row] { remove(row); });
    if (level == Level::Info && m_infoTimeoutMs > 0) {
        QPointer<QWidget> guard(row);
        QTimer::singleShot(m_infoTimeoutMs, this, [this, guard] {
            if (guard) remove(guard);
        });
    }
    setVisible(true);
    place();
    Q_EMIT changed();
}

void NotificationArea::remove(QWidget* row) {
    if (!row || m_layout->indexOf(row) < 0) return;
    m_layout->removeWidget(row);
    row->hide();
    row->deleteLater();
    setVisible(m_layout->count() > 0);
    place();
    Q_EMIT changed();
}

void NotificationArea::dismissAll() {
    while (m_layout->count() > 0) remove(m_layout->itemAt(0)->widget());
}

QStringList NotificationArea::shown() const {
    QStringList out;
    for (int i = 0; i < m_layout->count(); ++i)
        if (QWidget* row = m_layout->itemAt(i)->widget())
            out << QStringLiteral("%1: %2").arg(QLatin1String(levelName(Level(row->property("level").toInt()))),
                                                row->property("text").toString());
    return out;
}

} // namespace hearth::ui
