// ModelListModel shows a ModelLibrary to item views: one row per model, updated row by row
// (inserts, removals, dataChanged) when the library rescans, so selections survive.
#pragma once

#include "services/model_library.h"

#include <QAbstractListModel>
#include <QHash>
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
        FitRole,            // QString: "fits on GPU", ... (see setFitBadges); empty until known
        ProjectorRole,      // QString: the vision projector beside it ("" : takes no images)
        BadgesRole,         // QStringList: what it can do, for its card ("Vision", "Tools", "Thinking")
    };
    Q_ENUM(Role)

    explicit ModelListModel(ModelLibrary* library, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QHash<int, QByteArray> roleNames() const override;

    const ModelEntry* entry(int row) const;
    int rowOf(const QString& path) const; // -1 when absent
    // The fit badge of each model by path (the models page computes them with planMemory for
    // the current load settings); shown after the size on the second line of each row.
    void setFitBadges(const QHash<QString, QString>& badges);
    QString fitBadge(const QString& path) const { return m_fit.value(path); }

private:
    void sync();

    QPointer<ModelLibrary> m_library;
    QList<ModelEntry> m_rows;
    QHash<QString, QString> m_fit;
};

} // namespace hearth::app
