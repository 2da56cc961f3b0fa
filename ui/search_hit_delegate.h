// Draws a row of the chat list: a conversation, or a search hit whose matched words are
// highlighted from the ranges the store found (MatchesRole), so the text itself stays plain.
#pragma once

#include <QStyledItemDelegate>

namespace hearth::ui {

class SearchHitDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    // A QVariantList of QPoint(start, length) over the item's text; rows without it draw as usual.
    static constexpr int MatchesRole = Qt::UserRole + 1;

    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
};

} // namespace hearth::ui
