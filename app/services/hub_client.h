// HubClient talks to the Hugging Face hub's JSON API (or any server with the same API at another
// base URL): model search, a repository's file tree, and GGUF files grouped by quantization.
#pragma once

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QUrl>

class QNetworkAccessManager;
class QNetworkReply;

namespace hearth::app {

struct HubModel {
    QString id; // "owner/name"
    qint64 downloads = 0;
    qint64 likes = 0;
    QDateTime lastModified;
    QStringList tags;
    QString pipelineTag;
    bool gated = false;
};

struct HubFile {
    QString path;   // inside the repository, '/'-separated
    qint64 size = 0;
    QString sha256; // lowercase hex, from lfs.oid; empty for files not in LFS
};

// What the hub read from a repository's GGUF metadata (GET /api/models/{repo}?expand[]=gguf);
// empty fields when it has none.
struct HubModelDetails {
    QString architecture; // general.architecture: "qwen2", "llama", ...
    qint64 contextLength = 0;
    qint64 totalParameters = 0;
};

// One downloadable model variant: a single .gguf, or all parts of a split one, and the vision
// projector to pair with it when the repository has one.
struct QuantOption {
    QString quantization; // "Q4_K_M", "IQ4_XS", "F16", ...; the file's stem when not recognised
    QString name;         // file path without the split suffix: "sub/model-Q4_K_M.gguf"
    QList<HubFile> files; // in part order
    qint64 totalSize = 0;
    int partCount = 1;    // what the names announce ("-of-00003"); files.size() when complete
    HubFile projector;    // llama.cpp's mmproj file for images (empty path: none in the repository)
    bool isSplit() const { return partCount > 1; }
    bool hasProjector() const { return !projector.path.isEmpty(); }
    bool isComplete() const { return files.size() == partCount; }
};

class HubClient : public QObject {
    Q_OBJECT
public:
    // `network` may be shared; when null the client makes its own.
    explicit HubClient(QNetworkAccessManager* network = nullptr, QObject* parent = nullptr);
    ~HubClient() override;

    void setBaseUrl(const QUrl& url); // default https://huggingface.co
    QUrl baseUrl() const { return m_baseUrl; }
    // Sent as "Authorization: Bearer ..." to the base URL's host only.
    void setAccessToken(const QString& token) { m_token = token; }
    void setTimeout(int ms) { m_timeoutMs = ms; }

    // GET /api/models?search=Q&filter=gguf&limit=N -> searchFinished or failed.
    quint64 searchModels(const QString& query, int limit = 30);
    // GET /api/models/{repo}/tree/{revision}?recursive=true (following pages) -> filesListed.
    quint64 listFiles(const QString& repo, const QString& revision = QStringLiteral("main"));
    // GET /api/models/{repo}?expand[]=gguf -> detailsFetched (fields empty when the hub has no
    // GGUF metadata for the repository) or failed.
    quint64 fetchDetails(const QString& repo);
    // Stops a request; no signal comes for it.
    void abort(quint64 ticket);

    // {base}/{repo}/resolve/{revision}/{path}
    QUrl downloadUrl(const QString& repo, const QString& path,
                     const QString& revision = QStringLiteral("main")) const;

    static bool isValidRepoId(const QString& repo);
    // A relative path with no "..", empty or absolute parts: safe to join to a local folder.
    // Tree entries that fail this are dropped.
    static bool isSafeRepoPath(const QString& path);
    // The quantization named in a GGUF file name ("Q4_K_M", "IQ4_XS", "F16", ...), empty if none.
    static QString quantizationOf(const QString& fileName);
    // GGUF files (projector files left out) as variants, split parts joined, smallest first; each
    // with the projector preferredProjector picks for it.
    static QList<QuantOption> groupByQuantization(const QList<HubFile>& files);
    // Whether a file is a vision projector (llama.cpp's mmproj GGUF): its name holds "mmproj".
    static bool isProjectorFile(const QString& path);
    // The repository's projector files, the first to pair first: those in the folder of
    // `nearPath` (a model file's path) before the others, then F16, BF16, F32, the rest (the
    // order hearth::findProjectorFor takes), the smallest among equals, then by path.
    static QList<HubFile> projectorFiles(const QList<HubFile>& files, const QString& nearPath = QString());
    // The first of projectorFiles (empty path: none).
    static HubFile preferredProjector(const QList<HubFile>& files, const QString& nearPath = QString());

Q_SIGNALS:
    void searchFinished(quint64 ticket, const QList<hearth::app::HubModel>& models);
    void filesListed(quint64 ticket, const QString& repo, const QList<hearth::app::HubFile>& files);
    void detailsFetched(quint64 ticket, const QString& repo, const hearth::app::HubModelDetails& details);
    void failed(quint64 ticket, const QString& message);

private:
    struct Pending;
    QNetworkReply* get(const QUrl& url);
    // Registers a request about `repo` under `ticket`; false (its failure queued) when `repo` is
    // not a repository id.
    bool addRepoRequest(quint64 ticket, int kind, const QString& repo);
    void startTreePage(quint64 ticket, const QUrl& url);
    void onFinished(quint64 ticket, QNetworkReply* reply);

    QNetworkAccessManager* m_network = nullptr;
    QUrl m_baseUrl;
    QString m_token;
    int m_timeoutMs = 30000;
    quint64 m_nextTicket = 1;
    QHash<quint64, Pending*> m_pending;
};

// Why an HTTP request failed, in words for the user; empty when it did not.
QString describeReplyError(QNetworkReply* reply, const QString& what);

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::HubModel)
Q_DECLARE_METATYPE(hearth::app::HubFile)
Q_DECLARE_METATYPE(hearth::app::HubModelDetails)
Q_DECLARE_METATYPE(hearth::app::QuantOption)
