// ModelListModel: mirrors ModelLibrary::models() with minimal row changes.
#include "services/model_list_model.h"

#include <QFileInfo>
#include <QLocale>
#include <QSet>

namespace hearth::app {

ModelListModel::ModelListModel(ModelLibrary* library, QObject* parent)
    : QAbstractListModel(parent), m_library(library) {
    if (library) {
        connect(library, &ModelLibrary::modelsChanged, this, &ModelListModel::sync);
        m_rows = library->models();
    }
}

int ModelListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(m_rows.size());
}

const ModelEntry* ModelListModel::entry(int row) const {
    return row >= 0 && row < m_rows.size() ? &m_rows[row] : nullptr;
}

void ModelListModel::setFitBadges(const QHash<QString, QString>& badges) {
    if (badges == m_fit) return;
    m_fit = badges;
    if (!m_rows.isEmpty())
        Q_EMIT dataChanged(index(0, 0), index(int(m_rows.size()) - 1, 0), {Qt::DisplayRole, FitRole});
}

int ModelListModel::rowOf(const QString& path) const {
    for (int i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].path == path) return i;
    return -1;
}

QVariant ModelListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ModelEntry& e = m_rows[index.row()];
    switch (role) {
    case Qt::DisplayRole: {
        // Two lines: the model's name, then file, quantization and size.
        if (!e.isUsable()) return QStringLiteral("%1\n%2").arg(e.fileName, tr("cannot be used"));
        const QString size = QLocale().formattedDataSize(e.sizeBytes);
        const QString fit = m_fit.value(e.path);
        return QStringLiteral("%1%6\n%2 · %3 · %4%5")
            .arg(e.displayName(), e.fileName, e.quantization, size,
                 fit.isEmpty() ? QString() : QStringLiteral(" · ") + fit,
                 e.isVision() ? QStringLiteral("  [%1]").arg(tr("Vision")) : QString());
    }
    case Qt::ToolTipRole: {
        if (!e.isUsable()) return QStringLiteral("%1\n%2").arg(e.path, e.error);
        return QStringLiteral("%1\n%2 · %3 · %4 parameters · context %5%6")
            .arg(e.path, e.architecture, e.quantization, ModelLibrary::formatParameters(e.parameterCount))
            .arg(e.contextLength)
            .arg(e.isVision() ? tr("\nVision: takes images (projector %1)").arg(QFileInfo(e.projectorPath).fileName())
                              : QString());
    }
    case PathRole: return e.path;
    case FileNameRole: return e.fileName;
    case NameRole: return e.name;
    case ArchitectureRole: return e.architecture;
    case ParametersRole: return QVariant::fromValue<quint64>(e.parameterCount);
    case ParametersTextRole: return ModelLibrary::formatParameters(e.parameterCount);
    case QuantizationRole: return e.quantization;
    case ContextLengthRole: return e.contextLength;
    case SizeRole: return QVariant::fromValue<qint64>(e.sizeBytes);
    case MemoryRole: return QVariant::fromValue<quint64>(e.memoryBytes);
    case ChatTemplateRole: return e.hasChatTemplate;
    case ExternalRole: return e.external;
    case ErrorRole: return e.error;
    case ProjectorRole: return e.projectorPath;
    case BadgesRole: {
        QStringList badges;
        if (e.isVision()) badges << tr("Vision");
        if (e.tools) badges << tr("Tools");
        if (e.thinking) badges << tr("Thinking");
        return badges;
    }
    case EntryRole: return QVariant::fromValue(e);
    case FitRole: return m_fit.value(e.path);
    default: return {};
    }
}

QHash<int, QByteArray> ModelListModel::roleNames() const {
    QHash<int, QByteArray> names = QAbstractListModel::roleNames();
    names.insert(PathRole, "path");
    names.insert(FileNameRole, "fileName");
    names.insert(NameRole, "name");
    names.insert(ArchitectureRole, "architecture");
    names.insert(ParametersRole, "parameters");
    names.insert(ParametersTextRole, "parametersText");
    names.insert(QuantizationRole, "quantization");
    names.insert(ContextLengthRole, "contextLength");
    names.insert(SizeRole, "size");
    names.insert(MemoryRole, "memory");
    names.insert(ChatTemplateRole, "hasChatTemplate");
    names.insert(ExternalRole, "external");
    names.insert(ErrorRole, "error");
    names.insert(EntryRole, "entry");
    names.insert(FitRole, "fit");
    names.insert(ProjectorRole, "projector");
    names.insert(BadgesRole, "badges");
    return names;
}

void ModelListModel::sync() {
    if (!m_library) return;
    const QList<ModelEntry>& fresh = m_library->models();
    QSet<QString> freshPaths;
    for (const ModelEntry& e : fresh) freshPaths.insert(e.path);

    // 1. Rows that went away, bottom up.
    for (int r = int(m_rows.size()) - 1; r >= 0; --r) {
        if (freshPaths.contains(m_rows[r].path)) continue;
        beginRemoveRows({}, r, r);
        m_rows.removeAt(r);
        endRemoveRows();
    }
    // 2. What is left must keep its order in the new list; when it does not (a model was
    //    renamed and moved), fall back to a reset.
    qsizetype j = 0;
    for (const ModelEntry& e : fresh)
        if (j < m_rows.size() && m_rows[j].path == e.path) ++j;
    if (j != m_rows.size()) {
        beginResetModel();
        m_rows = fresh;
        endResetModel();
        return;
    }
    // 3. Walk the new list: update rows that changed, insert the new ones in place.
    for (int i = 0; i < fresh.size(); ++i) {
        if (i < m_rows.size() && m_rows[i].path == fresh[i].path) {
            if (!(m_rows[i] == fresh[i])) {
                m_rows[i] = fresh[i];
                const QModelIndex at = index(i);
                Q_EMIT dataChanged(at, at);
            }
            continue;
        }
        beginInsertRows({}, i, i);
        m_rows.insert(i, fresh[i]);
        endInsertRows();
    }
}

} // namespace hearth::app
