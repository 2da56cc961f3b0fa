// Model inspector: reads a GGUF with the engine's reader on a std::thread and fills two tables.
#include "model_info_view.h"

#include "count_text.h"

#include "hearth/gguf.h"

#include <QCoreApplication>
#include <QHeaderView>
#include <QLabel>
#include <QMetaObject>
#include <QPointer>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <thread>

namespace hearth::ui {

struct ModelInfoView::Summary {
    QString error;
    QList<QPair<QString, QString>> metadata;
    QList<QStringList> tensors; // name, type, shape, bytes
    quint64 totalBytes = 0;
};

ModelInfoView::ModelInfoView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    m_title = new QLabel(tr("No model open"), this);
    m_title->setObjectName(QStringLiteral("titleLabel"));
    QFont f = m_title->font();
    f.setPointSizeF(f.pointSizeF() * 1.3);
    f.setBold(true);
    m_title->setFont(f);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_title);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_metadata = new QTableWidget(0, 2, split);
    m_metadata->setObjectName(QStringLiteral("metadataTable"));
    m_metadata->setHorizontalHeaderLabels({tr("Key"), tr("Value")});
    m_tensors = new QTableWidget(0, 4, split);
    m_tensors->setObjectName(QStringLiteral("tensorTable"));
    m_tensors->setHorizontalHeaderLabels({tr("Tensor"), tr("Type"), tr("Shape"), tr("Bytes")});
    for (QTableWidget* t : {m_metadata, m_tensors}) {
        t->horizontalHeader()->setStretchLastSection(true);
        t->setEditTriggers(QAbstractItemView::NoEditTriggers);
        t->verticalHeader()->hide();
    }
    layout->addWidget(split, 1);
}

ModelInfoView::~ModelInfoView() {
    for (Reader& r : m_readers) r.thread.join();
}

void ModelInfoView::load(const QString& path) {
    const quint64 generation = ++m_generation;
    Q_EMIT statusChanged(tr("Reading %1...").arg(path), StatusLevel::Info);
    // Earlier readers that have finished are joined; a thread left running would meet the
    // process's exit (a reader was seen aborting inside exit, and the crash handler then hung).
    std::erase_if(m_readers, [](Reader& r) {
        if (!r.done->load()) return false;
        r.thread.join();
        return true;
    });
    QPointer<ModelInfoView> self(this);
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread reader([self, path, generation, done] {
        Summary s;
        auto file = gguf::File::open(path.toStdString());
        if (!file) {
            s.error = QString::fromStdString(file.status().toString());
        } else {
            for (const gguf::KeyValue& kv : file->metadata())
                s.metadata.append({QString::fromStdString(kv.key),
                                   QString::fromStdString(kv.value.toDisplayString())});
            for (const gguf::TensorInfo& t : file->tensors()) {
                s.tensors.append({QString::fromStdString(t.name),
                                  QString::fromUtf8(quant::typeName(t.type).data(),
                                                    qsizetype(quant::typeName(t.type).size())),
                                  QString::fromStdString(t.shapeString()),
                                  QString::number(t.bytes)});
                s.totalBytes += t.bytes;
            }
        }
        QMetaObject::invokeMethod(
            qApp,
            [self, path, generation, s] {
                if (self && self->m_generation == generation) self->show(path, s);
            },
            Qt::QueuedConnection);
        done->store(true);
    });
    m_readers.push_back({std::move(reader), std::move(done)});
}

void ModelInfoView::show(const QString& path, const Summary& s) {
    if (!s.error.isEmpty()) {
        m_title->setText(tr("Cannot open %1").arg(path));
        m_metadata->setRowCount(0);
        m_tensors->setRowCount(0);
        Q_EMIT statusChanged(s.error, StatusLevel::Error);
        Q_EMIT loaded(false);
        return;
    }
    m_title->setText(path);
    m_metadata->setRowCount(int(s.metadata.size()));
    for (int i = 0; i < s.metadata.size(); ++i) {
        m_metadata->setItem(i, 0, new QTableWidgetItem(s.metadata[i].first));
        m_metadata->setItem(i, 1, new QTableWidgetItem(s.metadata[i].second));
    }
    m_tensors->setRowCount(int(s.tensors.size()));
    for (int i = 0; i < s.tensors.size(); ++i)
        for (int c = 0; c < 4; ++c)
            m_tensors->setItem(i, c, new QTableWidgetItem(s.tensors[i][c]));
    m_metadata->resizeColumnToContents(0);
    m_tensors->resizeColumnsToContents();
    Q_EMIT statusChanged(tr("%1, %2, %3 MiB of weights")
                             .arg(countText(s.metadata.size(), tr("metadata key"), tr("metadata keys")),
                                  countText(s.tensors.size(), tr("tensor"), tr("tensors")))
                             .arg(double(s.totalBytes) / (1 << 20), 0, 'f', 1),
                         StatusLevel::Info);
    Q_EMIT loaded(true);
}

} // namespace hearth::ui
