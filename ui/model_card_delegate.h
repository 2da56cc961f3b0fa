// The library's models drawn as cards, as LM Studio and Jan list them: the model's name, then its
// family, size in parameters, quantization and file size, then whether it fits this machine and
// what it can do (Vision, Tools, Thinking) as badges; a file that cannot be used says why.
#pragma once

#include <QStyledItemDelegate>

namespace hearth::ui {

class ModelCardDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    // For rows that are not library models (a hub repository, a starter): the card's title and
    // second line as given; the fit and badges come from ModelListModel's FitRole and BadgesRole.
    // NoteRole: a remark shown after the fit and badges (elided where it does not fit).
    enum Role { TitleRole = Qt::UserRole + 200, DetailRole, NoteRole };

    explicit ModelCardDelegate(QObject* parent = nullptr);

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

    // The card's first and second lines (name; family, parameters, quantization, size) for
    // `index` (tests).
    static QString titleLine(const QModelIndex& index);
    static QString detailLine(const QModelIndex& index);
};

} // namespace hearth::ui
