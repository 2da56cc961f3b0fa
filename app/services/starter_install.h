// StarterInstall gets one curated starter model onto this machine: it lists the repository's
// files on the hub, picks the variant the starter names, downloads every part (resumable, SHA-256
// checked) into the models folder, and reports the path to load.
#pragma once

#include "services/hub_client.h"
#include "services/model_library.h"

#include <QObject>
#include <QSet>
#include <QString>

namespace hearth::app {

class DownloadManager;

class StarterInstall : public QObject {
    Q_OBJECT
public:
    StarterInstall(HubClient* hub, DownloadManager* downloads, const QString& modelsFolder,
                   QObject* parent = nullptr);

    // Starts (one at a time; a second call while busy is refused with failed()).
    void start(const StarterModel& starter);
    void cancel();
    bool isBusy() const { return m_busy; }
    const StarterModel& starter() const { return m_starter; }

    // The variant of `files` the starter names (its filePattern; else its quantization);
    // an empty option when none matches.
    static QuantOption pickOption(const StarterModel& starter, const QList<HubFile>& files);

Q_SIGNALS:
    // stage: "Looking up the files", "Downloading", "Verifying"; total -1 while unknown.
    void progress(const QString& stage, qint64 received, qint64 total);
    void finished(const QString& path); // the first part of the model, ready to load
    void failed(const QString& message);

private:
    void onFiles(quint64 ticket, const QString& repo, const QList<HubFile>& files);
    void onCompleted(quint64 id, const QString& path);
    void fail(const QString& message);
    void report();

    HubClient* m_hub;
    DownloadManager* m_downloads;
    QString m_folder;
    StarterModel m_starter;
    bool m_busy = false;
    quint64 m_filesTicket = 0;
    QSet<quint64> m_pending;             // download ids not finished yet
    QHash<quint64, qint64> m_received;   // per download
    qint64 m_total = -1;
    qint64 m_alreadyHave = 0;            // parts already in the folder from an earlier run
    QString m_firstPart;
};

} // namespace hearth::app
