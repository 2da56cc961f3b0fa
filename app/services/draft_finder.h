// Finds the library's files that can draft for a model (hearth::checkDraftModel on each, from
// metadata only), on a worker thread of its own; the answer comes back as a signal.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>

class QThread;

namespace hearth::app {

class DraftModelFinder : public QObject {
    Q_OBJECT
public:
    explicit DraftModelFinder(QObject* parent = nullptr);
    ~DraftModelFinder() override; // finishes the check under way and joins the thread

    // Checks `candidates` for `model` off the calling thread; found() follows on this object's
    // thread. A later call supersedes an earlier one still running (only the latest is answered).
    void find(const QString& model, const QStringList& candidates);

    // The check itself, blocking: the candidates that can draft for model, in their order. A
    // draft must be another file, smaller than the model, that passes checkDraftModel. A model
    // with a multi-token-prediction head (checkMtpHead) is listed first itself: its own drafter.
    static QStringList compatible(const QString& model, const QStringList& candidates,
                                  const std::atomic<quint64>* generation = nullptr, quint64 mine = 0);

Q_SIGNALS:
    void found(const QString& model, const QStringList& drafts);

private:
    QThread* m_thread = nullptr;
    QObject* m_worker = nullptr; // lives on m_thread
    std::atomic<quint64> m_generation{0};
};

} // namespace hearth::app
