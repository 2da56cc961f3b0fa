// The library's models drawn as cards, as LM Studio and Jan list them: the model's name, then its
// family, size in parameters, quantization and file size, then whether it fits this machine and
// what it can do (Vision, Tools, Thinking) as badges; a file that cannot be used says why.
#pragma once

#include <QStyledItemDelegate>

namespace hearth::ui {

class ModelCardDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit ModelCardDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    // The card's second line (family, parameters, quantization, size) for `index` (tests).
    static QString detailLine(const QModelIndex& index);
};

} // namespace hearth::ui
