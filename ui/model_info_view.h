// Shows a GGUF model's metadata and tensor table. Parsing happens on a worker thread; results
// come back to the GUI thread as values through a queued call.
#pragma once

#include "status_level.h"
#include <QWidget>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

class QLabel;
class QTableWidget;

namespace hearth::ui {

class ModelInfoView : public QWidget {
    Q_OBJECT
public:
    explicit ModelInfoView(QWidget* parent = nullptr);
    ~ModelInfoView() override; // waits for readers still running (none may outlive the app)
    void load(const QString& path);

Q_SIGNALS:
    void statusChanged(const QString& text, hearth::ui::StatusLevel level);
    // Emitted on the GUI thread once a load has finished; ok is false when the file was refused.
    void loaded(bool ok);

private:
    struct Summary;
    void show(const QString& path, const Summary& summary);

    QLabel* m_title = nullptr;
    QTableWidget* m_metadata = nullptr;
    QTableWidget* m_tensors = nullptr;
    quint64 m_generation = 0; // ignores results of superseded loads
    struct Reader {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::vector<Reader> m_readers; // joined once done (at the next load) or at destruction
};

} // namespace hearth::ui
