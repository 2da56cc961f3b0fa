// ModelListModel shows a ModelLibrary to item views: one row per model, updated row by row
// (inserts, removals, dataChanged) when the library rescans, so selections survive.
#pragma once

#include "services/model_library.h"

#include <QAbstractListModel>
#include <QPointer>

namespace hearth::app {

class ModelListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Role {
        PathRole = Qt::UserRole + 1,
        FileNameRole,
        NameRole,
        ArchitectureRole,
        ParametersRole,     // quint64
        ParametersTextRole, // "1.5B"
        QuantizationRole,
        ContextLengthRole,
        SizeRole,           // qint64 bytes
        MemoryRole,         // quint64 bytes
        ChatTemplateRole,   // bool
        ExternalRole,       // bool
        ErrorRole,          // QString, empty when usable
        EntryRole,          // the whole ModelEntry
    };
    Q_ENUM(Role)

    explicit ModelListModel(ModelLibrary* library, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    const ModelEntry* entry(int row) const;
    int rowOf(const QString& path) const; // -1 when absent

private:
    void sync();

    QPointer<ModelLibrary> m_library;
    QList<ModelEntry> m_rows;
};

} // namespace hearth::app
