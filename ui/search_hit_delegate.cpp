// SearchHitDelegate: the item's background from the style, then its text (each line of it) with
// the matched ranges in bold on a tint of the highlight colour.
#include "search_hit_delegate.h"

#include <QApplication>
#include <QPainter>
#include <QTextLayout>

namespace hearth::ui {

void SearchHitDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    const QVariantList matches = index.data(MatchesRole).toList();
    if (matches.isEmpty()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QString text = opt.text;
    opt.text.clear();
    QStyle* style = opt.widget ? opt.widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, opt.widget);
    const QRect area = style->subElementRect(QStyle::SE_ItemViewItemText, &opt, opt.widget).adjusted(2, 0, -2, 0);

    const bool selected = opt.state & QStyle::State_Selected;
    QColor tint = opt.palette.color(QPalette::Highlight);
    tint.setAlpha(selected ? 0 : 70);
    QList<QTextLayout::FormatRange> formats;
    for (const QVariant& v : matches) {
        const QPoint m = v.toPoint();
        QTextLayout::FormatRange r;
        r.start = m.x();
        r.length = m.y();
        r.format.setFontWeight(QFont::Bold);
        r.format.setBackground(tint);
        formats << r;
    }
    // One layout for the whole text: the item's "\n" comes as a line separator, a forced break.
    QTextLayout layout(text, opt.font);
    layout.setFormats(formats);
    layout.beginLayout();
    qreal height = 0;
    for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
        line.setLineWidth(area.width());
        line.setPosition(QPointF(0, height));
        height += line.height();
    }
    layout.endLayout();
    painter->save();
    painter->setClipRect(area);
    painter->setPen(opt.palette.color(selected ? QPalette::HighlightedText : QPalette::Text));
    layout.draw(painter, QPointF(area.left(), area.top() + std::max<qreal>(0, (area.height() - height) / 2)));
    painter->restore();
}

} // namespace hearth::ui
