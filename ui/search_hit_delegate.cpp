// SearchHitDelegate: the item's background from the style, then its text line by line with the
// matched ranges in bold on a tint of the highlight colour.
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
    painter->save();
    painter->setClipRect(area);
    painter->setPen(opt.palette.color(selected ? QPalette::HighlightedText : QPalette::Text));
    const QFontMetricsF metrics(opt.font);
    qreal y = area.top() + std::max(0.0, (area.height() - metrics.lineSpacing() * (text.count(QLatin1Char('\n')) + 1)) / 2);
    qsizetype lineStart = 0;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        QList<QTextLayout::FormatRange> formats;
        for (const QVariant& v : matches) {
            const QPoint m = v.toPoint();
            const qsizetype from = std::max<qsizetype>(m.x(), lineStart);
            const qsizetype to = std::min<qsizetype>(m.x() + m.y(), lineStart + line.size());
            if (to <= from) continue;
            QTextLayout::FormatRange r;
            r.start = int(from - lineStart);
            r.length = int(to - from);
            r.format.setFontWeight(QFont::Bold);
            r.format.setBackground(tint);
            formats << r;
        }
        QTextLayout layout(line, opt.font);
        layout.setFormats(formats);
        layout.beginLayout();
        QTextLine l = layout.createLine();
        if (l.isValid()) l.setLineWidth(area.width());
        layout.endLayout();
        layout.draw(painter, QPointF(area.left(), y));
        y += metrics.lineSpacing();
        lineStart += line.size() + 1;
    }
    painter->restore();
}

} // namespace hearth::ui
