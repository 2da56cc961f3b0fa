// The library's model cards (see model_card_delegate.h): a rounded panel per row, three lines,
// the badges as small rounded labels; colours from the view's palette, so both themes read.
#include "model_card_delegate.h"

#include "services/model_list_model.h"

#include <QApplication>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>

namespace hearth::ui {

namespace {

constexpr int kMargin = 4;   // around the card
constexpr int kPadding = 8;  // inside it
constexpr int kLineGap = 3;

QColor mixed(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                            float(a.blueF() * (1 - t) + b.blueF() * t));
}

QFont titleFont(const QFont& base) {
    QFont f = base;
    f.setBold(true);
    f.setPointSizeF(base.pointSizeF() > 0 ? base.pointSizeF() * 1.1 : base.pointSizeF());
    return f;
}

QFont badgeFont(const QFont& base) {
    QFont f = base;
    if (base.pointSizeF() > 0) f.setPointSizeF(base.pointSizeF() * 0.85);
    return f;
}

} // namespace

ModelCardDelegate::ModelCardDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

QString ModelCardDelegate::titleLine(const QModelIndex& index) {
    if (const QVariant title = index.data(TitleRole); title.isValid()) return title.toString();
    return index.data(app::ModelListModel::EntryRole).value<app::ModelEntry>().displayName();
}

QString ModelCardDelegate::detailLine(const QModelIndex& index) {
    using M = app::ModelListModel;
    if (const QVariant detail = index.data(DetailRole); detail.isValid()) return detail.toString();
    if (!index.data(M::ErrorRole).toString().isEmpty()) return tr("cannot be used: %1").arg(index.data(M::ErrorRole).toString());
    QStringList parts;
    for (const QString& p : {index.data(M::ArchitectureRole).toString(), index.data(M::ParametersTextRole).toString(),
                             index.data(M::QuantizationRole).toString()})
        if (!p.isEmpty()) parts << p;
    parts << QLocale().formattedDataSize(index.data(M::SizeRole).toLongLong());
    return parts.join(QStringLiteral(" · "));
}

QSize ModelCardDelegate::sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const {
    const QFontMetrics title(titleFont(option.font));
    const QFontMetrics text(option.font);
    const QFontMetrics badge(badgeFont(option.font));
    const int height = 2 * kMargin + 2 * kPadding + title.height() + text.height() + badge.height() + 4 + 2 * kLineGap;
    return {std::max(200, option.rect.width()), height};
}

void ModelCardDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    using M = app::ModelListModel;
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, true);
    const QPalette& pal = option.palette;
    const bool selected = option.state & QStyle::State_Selected;
    const bool hovered = option.state & QStyle::State_MouseOver;
    const QColor base = pal.color(QPalette::Base);
    const QColor text = pal.color(QPalette::Text);
    const QColor accent = pal.color(QPalette::Highlight);
    const bool dark = base.lightnessF() < 0.5;

    const QRectF card = QRectF(option.rect).adjusted(kMargin, kMargin, -kMargin, -kMargin);
    QPainterPath panel;
    panel.addRoundedRect(card, 8, 8);
    painter->fillPath(panel, selected ? mixed(base, accent, dark ? 0.35 : 0.18)
                             : hovered ? mixed(base, text, 0.06)
                                       : mixed(base, text, dark ? 0.05 : 0.025));
    painter->setPen(QPen(selected ? accent : mixed(base, text, 0.18), selected ? 1.5 : 1.0));
    painter->drawPath(panel);

    const QRect inner = card.toRect().adjusted(kPadding, kPadding, -kPadding, -kPadding);
    int y = inner.top();
    const QFont tf = titleFont(option.font);
    painter->setFont(tf);
    painter->setPen(text);
    const QFontMetrics tm(tf);
    const QString name = titleLine(index);
    painter->drawText(QRect(inner.left(), y, inner.width(), tm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                      tm.elidedText(name, Qt::ElideRight, inner.width()));
    y += tm.height() + kLineGap;

    painter->setFont(option.font);
    const QFontMetrics fm(option.font);
    const bool usable = index.data(M::ErrorRole).toString().isEmpty();
    painter->setPen(usable ? mixed(text, base, 0.3) : (dark ? QColor(0xff, 0x8a, 0x80) : QColor(0xb3, 0x26, 0x1e)));
    painter->drawText(QRect(inner.left(), y, inner.width(), fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
                      fm.elidedText(detailLine(index), Qt::ElideRight, inner.width()));
    y += fm.height() + kLineGap;

    // The fit verdict, then the badges.
    const QFont bf = badgeFont(option.font);
    const QFontMetrics bm(bf);
    int x = inner.left();
    const QString fit = index.data(M::FitRole).toString();
    if (!fit.isEmpty()) {
        const bool wontFit = fit.contains(QStringLiteral("won't"));
        const bool tight = fit.contains(QStringLiteral("tight"));
        painter->setFont(option.font);
        painter->setPen(wontFit ? (dark ? QColor(0xff, 0x8a, 0x80) : QColor(0xb3, 0x26, 0x1e))
                        : tight ? (dark ? QColor(0xf2, 0xc0, 0x6b) : QColor(0x9a, 0x5b, 0x00))
                                : (dark ? QColor(0x7f, 0xd8, 0xbe) : QColor(0x0b, 0x6e, 0x4f)));
        const int w = fm.horizontalAdvance(fit);
        painter->drawText(QRect(x, y, w + 2, bm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter, fit);
        x += w + 10;
    }
    painter->setFont(bf);
    for (const QString& badge : index.data(M::BadgesRole).toStringList()) {
        const int w = bm.horizontalAdvance(badge) + 12;
        if (x + w > inner.right()) break;
        const QRectF pill(x, y, w, bm.height() + 4);
        QPainterPath path;
        path.addRoundedRect(pill, pill.height() / 2, pill.height() / 2);
        painter->fillPath(path, mixed(base, accent, selected ? (dark ? 0.65 : 0.38) : (dark ? 0.45 : 0.2)));
        painter->setPen(dark ? mixed(accent, Qt::white, 0.6) : mixed(accent, Qt::black, 0.45));
        painter->drawText(pill, Qt::AlignCenter, badge);
        x += w + 6;
    }
    if (const QString note = index.data(NoteRole).toString(); !note.isEmpty() && x < inner.right() - 40) {
        painter->setFont(option.font);
        painter->setPen(mixed(text, base, 0.35));
        const QRect room(x, y, inner.right() - x, bm.height() + 4);
        painter->drawText(room, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(note, Qt::ElideRight, room.width()));
    }
    if (option.state & QStyle::State_HasFocus) {
        painter->setPen(QPen(accent, 1, Qt::DotLine));
        painter->setBrush(Qt::NoBrush);
        painter->drawRoundedRect(card.adjusted(2, 2, -2, -2), 6, 6);
    }
    painter->restore();
}

} // namespace hearth::ui
