// Shows a GGUF model's metadata and tensor table. Parsing happens on a worker thread; results
// come back to the GUI thread as values through a queued call.
#pragma once

#include <QWidget>

class QLabel;
class QTableWidget;

namespace hearth::ui {

class ModelInfoView : public QWidget {
    Q_OBJECT
public:
    explicit ModelInfoView(QWidget* parent = nullptr);
    void load(const QString& path);

Q_SIGNALS:
    void statusChanged(const QString& text);
    // Emitted on the GUI thread once a load has finished; ok is false when the file was refused.
    void loaded(bool ok);

private:
    struct Summary;
    void show(const QString& path, const Summary& summary);

    QLabel* m_title = nullptr;
    QTableWidget* m_metadata = nullptr;
    QTableWidget* m_tensors = nullptr;
    quint64 m_generation = 0; // ignores results of superseded loads
};

} // namespace hearth::ui
