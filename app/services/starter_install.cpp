// StarterInstall: hub listing -> variant choice -> downloads -> the path to load.
#include "services/starter_install.h"

#include "services/download_manager.h"
#include "services/model_origins.h"

#include <QDir>
#include <QFileInfo>

#include <spdlog/spdlog.h>

namespace hearth::app {

StarterInstall::StarterInstall(HubClient* hub, DownloadManager* downloads, const QString& modelsFolder,
                               QObject* parent)
    : QObject(parent), m_hub(hub), m_downloads(downloads), m_folder(modelsFolder) {
    connect(m_hub, &HubClient::filesListed, this, &StarterInstall::onFiles);
    connect(m_hub, &HubClient::failed, this, [this](quint64 ticket, const QString& message) {
        if (ticket == m_filesTicket) fail(message);
    });
    connect(m_downloads, &DownloadManager::progress, this, [this](quint64 id, qint64 received, qint64, double, int) {
        if (!m_pending.contains(id)) return;
        m_received[id] = received;
        report();
    });
    connect(m_downloads, &DownloadManager::stateChanged, this, [this](quint64 id, DownloadState state) {
        if (m_pending.contains(id) && state == DownloadState::Verifying) Q_EMIT progress(tr("Verifying"), m_total, m_total);
    });
    connect(m_downloads, &DownloadManager::completed, this, &StarterInstall::onCompleted);
    connect(m_downloads, &DownloadManager::failed, this, [this](quint64 id, const QString& message) {
        if (m_pending.contains(id)) fail(message);
    });
}

QuantOption StarterInstall::pickOption(const StarterModel& starter, const QList<HubFile>& files) {
    const QList<QuantOption> options = HubClient::groupByQuantization(files);
    for (const QuantOption& o : options)
        if (o.isComplete() && starter.matches(o.name.section(QLatin1Char('/'), -1))) return o;
    for (const QuantOption& o : options)
        if (o.isComplete() && o.quantization.compare(starter.quantization, Qt::CaseInsensitive) == 0) return o;
    return {};
}

void StarterInstall::start(const StarterModel& starter) {
    if (m_busy) {
        Q_EMIT failed(tr("another model is being set up"));
        return;
    }
    m_busy = true;
    m_starter = starter;
    m_pending.clear();
    m_received.clear();
    m_total = -1;
    m_alreadyHave = 0;
    m_firstPart.clear();
    Q_EMIT progress(tr("Looking up the files"), 0, -1);
    m_filesTicket = m_hub->listFiles(starter.repo);
}

void StarterInstall::onFiles(quint64 ticket, const QString& repo, const QList<HubFile>& files) {
    if (ticket != m_filesTicket) return;
    m_filesTicket = 0;
    const QuantOption option = pickOption(m_starter, files);
    if (option.files.isEmpty()) {
        fail(tr("%1 has no file matching %2 any more").arg(repo, m_starter.filePattern));
        return;
    }
    m_total = option.totalSize > 0 ? option.totalSize : -1;
    QHash<QString, ModelOrigin> origins; // so that the Models page can offer its projector later
    for (const HubFile& f : option.files)
        origins.insert(f.path.section(QLatin1Char('/'), -1), ModelOrigin{repo, f.path, f.sha256, f.size, option.projector});
    QString originError;
    if (!recordModelOrigins(m_folder, origins, &originError)) spdlog::warn("starter: {}", originError.toStdString());
    for (const HubFile& f : option.files) {
        DownloadRequest r;
        r.url = m_hub->downloadUrl(repo, f.path);
        r.destination = QDir(m_folder).filePath(f.path.section(QLatin1Char('/'), -1));
        r.expectedSha256 = f.sha256;
        r.expectedSize = f.size;
        r.displayName = f.path.section(QLatin1Char('/'), -1);
        if (m_firstPart.isEmpty()) m_firstPart = r.destination;
        // A file already there in full (an earlier run) is not fetched again.
        if (QFileInfo(r.destination).isFile() && (f.size <= 0 || QFileInfo(r.destination).size() == f.size)) {
            m_alreadyHave += f.size;
            continue;
        }
        m_pending.insert(m_downloads->enqueue(r));
    }
    if (m_pending.isEmpty()) {
        m_busy = false;
        Q_EMIT finished(m_firstPart);
        return;
    }
    report();
}

void StarterInstall::onCompleted(quint64 id, const QString&) {
    if (!m_pending.remove(id)) return;
    if (!m_pending.isEmpty()) return;
    m_busy = false;
    Q_EMIT finished(m_firstPart);
}

void StarterInstall::report() {
    qint64 sum = m_alreadyHave;
    for (qint64 v : m_received) sum += v;
    Q_EMIT progress(tr("Downloading"), sum, m_total);
}

void StarterInstall::cancel() {
    if (!m_busy) return;
    if (m_filesTicket) m_hub->abort(m_filesTicket);
    for (quint64 id : std::as_const(m_pending)) m_downloads->cancel(id);
    m_pending.clear();
    m_filesTicket = 0;
    m_busy = false;
}

void StarterInstall::fail(const QString& message) {
    for (quint64 id : std::as_const(m_pending)) m_downloads->pause(id); // kept for a later try
    m_pending.clear();
    m_filesTicket = 0;
    m_busy = false;
    Q_EMIT failed(message);
}

} // namespace hearth::app
