// DraftModelFinder: compatibility checks of draft models on a worker thread.
#include "services/draft_finder.h"

#include "hearth/engine.h"

#include <QFileInfo>
#include <QThread>

namespace hearth::app {

DraftModelFinder::DraftModelFinder(QObject* parent) : QObject(parent) {
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("draft finder"));
    m_worker = new QObject();
    m_worker->moveToThread(m_thread);
    connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread->start();
}

DraftModelFinder::~DraftModelFinder() {
    ++m_generation; // a check under way stops at its next file
    m_thread->quit();
    m_thread->wait();
}

QStringList DraftModelFinder::compatible(const QString& model, const QStringList& candidates,
                                         const std::atomic<quint64>* generation, quint64 mine) {
    QStringList out;
    const QFileInfo target(model);
    if (!target.isFile()) return out;
    const QString targetPath = target.canonicalFilePath();
    // The model's own multi-token-prediction head comes first: the model's path stands for it.
    if (checkMtpHead(model.toStdString()).isOk()) out << model;
    // The model's tokenizer is read once for all the candidates.
    const Result<DraftChecker> checker = DraftChecker::open(model.toStdString());
    if (!checker) return out;
    for (const QString& path : candidates) {
        if (generation && generation->load() != mine) return {};
        const QFileInfo info(path);
        // A draft is another file, and smaller: a larger one costs more per token than it saves.
        if (!info.isFile() || info.canonicalFilePath() == targetPath || info.size() >= target.size()) continue;
        if (checker->check(path.toStdString()).isOk()) out << path;
    }
    return out;
}

void DraftModelFinder::find(const QString& model, const QStringList& candidates) {
    const quint64 mine = ++m_generation;
    // `this` outlives the worker's part: the destructor waits for the thread, and an answer
    // posted before it finished is dropped with the object.
    QMetaObject::invokeMethod(
        m_worker,
        [this, model, candidates, mine] {
            const QStringList drafts = compatible(model, candidates, &m_generation, mine);
            if (m_generation.load() != mine) return;
            QMetaObject::invokeMethod(
                this, [this, model, drafts, mine] {
                    if (m_generation.load() == mine) Q_EMIT found(model, drafts);
                },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
}

} // namespace hearth::app
