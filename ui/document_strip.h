// The files attached as text to the message being written, as small labels above the chat's
// input (name and length), each with a remove (×) button; hidden while there are none.
#pragma once

#include "services/service_types.h"

#include <QList>
#include <QStringList>
#include <QWidget>

class QHBoxLayout;
class QMimeData;

namespace hearth::ui {

// The local files in a drag or paste that are not images (those go to the image strip).
QStringList droppedDocumentFiles(const QMimeData* data);

class DocumentStrip : public QWidget {
    Q_OBJECT
public:
    explicit DocumentStrip(QWidget* parent = nullptr);

    void addDocuments(const QList<app::ChatDocument>& documents);
    void removeAt(int index);
    void clear();
    const QList<app::ChatDocument>& documents() const { return m_documents; }
    int count() const { return int(m_documents.size()); }
    qsizetype characters() const; // all of them together

Q_SIGNALS:
    void changed();

private:
    void rebuild();

    QList<app::ChatDocument> m_documents;
    QHBoxLayout* m_row = nullptr;
};

} // namespace hearth::ui
