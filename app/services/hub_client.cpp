// HubClient: requests over QNetworkAccessManager, replies checked (status, JSON shape) before use.
#include "services/hub_client.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QRegularExpression>
#include <QUrlQuery>

#include <spdlog/spdlog.h>

#include <algorithm>

namespace hearth::app {

namespace {

constexpr int kMaxTreePages = 50;

QString jsonErrorDetail(const QByteArray& body) {
    const QJsonDocument doc = QJsonDocument::fromJson(body.left(64 * 1024));
    if (doc.isObject()) {
        const QString e = doc.object().value(QStringLiteral("error")).toString();
        if (!e.isEmpty()) return e.left(300);
    }
    return {};
}

// The next page of a paginated listing: Link: <url>; rel="next".
QUrl nextPageUrl(const QNetworkReply* reply) {
    static const QRegularExpression next(QStringLiteral(R"(<([^>]+)>\s*;\s*rel="?next"?)"));
    const QString link = QString::fromUtf8(reply->rawHeader("Link"));
    const QRegularExpressionMatch m = next.match(link);
    if (!m.hasMatch()) return {};
    return reply->url().resolved(QUrl(m.captured(1)));
}

qint64 jsonInt(const QJsonValue& v) {
    return v.isDouble() ? qint64(v.toDouble()) : v.toString().toLongLong();
}

} // namespace

QString describeReplyError(QNetworkReply* reply, const QString& what) {
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) {
        const QString detail = jsonErrorDetail(reply->readAll());
        const QString reason =
            QString::fromUtf8(reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toByteArray());
        QString message = QStringLiteral("%1: the server answered HTTP %2%3")
                              .arg(what)
                              .arg(status)
                              .arg(reason.isEmpty() ? QString() : QLatin1Char(' ') + reason);
        if (!detail.isEmpty()) message += QStringLiteral(" (%1)").arg(detail);
        if (status == 401 || status == 403)
            message += QStringLiteral(". The repository may be private or gated: accept its terms on "
                                      "the hub and set an access token in Settings.");
        else if (status == 404)
            message += QStringLiteral(". Check the repository and file name.");
        else if (status == 429)
            message += QStringLiteral(". Too many requests: try again in a minute.");
        return message;
    }
    if (reply->error() == QNetworkReply::NoError) return {};
    const QString host = reply->url().host();
    if (reply->error() == QNetworkReply::OperationCanceledError)
        return QStringLiteral("%1: %2 did not answer in time").arg(what, host);
    return QStringLiteral("%1: cannot reach %2 (%3)").arg(what, host, reply->errorString());
}

struct HubClient::Pending {
    enum class Kind { Search, Tree, Details } kind = Kind::Search;
    QString repo;
    QList<HubFile> files;
    int pages = 0;
    QNetworkReply* reply = nullptr;
};

HubClient::HubClient(QNetworkAccessManager* network, QObject* parent)
    : QObject(parent), m_network(network ? network : new QNetworkAccessManager(this)),
      m_baseUrl(QStringLiteral("https://huggingface.co")) {
    qRegisterMetaType<QList<HubModel>>();
    qRegisterMetaType<QList<HubFile>>();
    qRegisterMetaType<HubModelDetails>();
}

HubClient::~HubClient() {
    for (Pending* p : std::as_const(m_pending)) {
        if (p->reply) {
            p->reply->disconnect(this);
            p->reply->abort();
            p->reply->deleteLater();
        }
        delete p;
    }
}

void HubClient::setBaseUrl(const QUrl& url) {
    m_baseUrl = url.adjusted(QUrl::StripTrailingSlash | QUrl::RemoveQuery | QUrl::RemoveFragment);
    if (m_baseUrl.path() == QStringLiteral("/")) m_baseUrl.setPath(QString());
}

bool HubClient::isValidRepoId(const QString& repo) {
    static const QRegularExpression re(
        QStringLiteral(R"(^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$)"));
    return re.match(repo).hasMatch() && !repo.contains(QStringLiteral(".."));
}

bool HubClient::isSafeRepoPath(const QString& path) {
    if (path.isEmpty() || path.size() > 1024 || path.startsWith(QLatin1Char('/')) ||
        path.contains(QLatin1Char('\\')) || path.contains(QChar(0)) || path.contains(QLatin1Char(':')))
        return false;
    for (const QString& part : path.split(QLatin1Char('/')))
        if (part.isEmpty() || part == QStringLiteral(".") || part == QStringLiteral("..")) return false;
    return true;
}

QUrl HubClient::downloadUrl(const QString& repo, const QString& path, const QString& revision) const {
    QUrl url = m_baseUrl;
    url.setPath(m_baseUrl.path() + QLatin1Char('/') + repo + QStringLiteral("/resolve/") + revision +
                    QLatin1Char('/') + path,
                QUrl::DecodedMode);
    return url;
}

QNetworkReply* HubClient::get(const QUrl& url) {
    QNetworkRequest request(url);
    request.setRawHeader("Accept", "application/json");
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::SameOriginRedirectPolicy);
    request.setTransferTimeout(m_timeoutMs);
    if (!m_token.isEmpty() && url.host() == m_baseUrl.host())
        request.setRawHeader("Authorization", "Bearer " + m_token.toUtf8());
    return m_network->get(request);
}

quint64 HubClient::searchModels(const QString& query, int limit) {
    const quint64 ticket = m_nextTicket++;
    auto* p = new Pending;
    p->kind = Pending::Kind::Search;
    m_pending.insert(ticket, p);
    QUrl url = m_baseUrl;
    url.setPath(m_baseUrl.path() + QStringLiteral("/api/models"));
    QUrlQuery q;
    q.addQueryItem(QStringLiteral("search"), QString::fromUtf8(QUrl::toPercentEncoding(query.trimmed())));
    q.addQueryItem(QStringLiteral("filter"), QStringLiteral("gguf"));
    q.addQueryItem(QStringLiteral("limit"), QString::number(std::clamp(limit, 1, 1000)));
    url.setQuery(q);
    p->reply = get(url);
    connect(p->reply, &QNetworkReply::finished, this, [this, ticket, r = p->reply] { onFinished(ticket, r); });
    return ticket;
}

bool HubClient::addRepoRequest(quint64 ticket, int kind, const QString& repo) {
    auto* p = new Pending;
    p->kind = Pending::Kind(kind);
    p->repo = repo;
    m_pending.insert(ticket, p);
    if (isValidRepoId(repo)) return true;
    QMetaObject::invokeMethod(
        this,
        [this, ticket, repo] {
            delete m_pending.take(ticket);
            Q_EMIT failed(ticket, QStringLiteral("'%1' is not a repository id (owner/name)").arg(repo));
        },
        Qt::QueuedConnection);
    return false;
}

quint64 HubClient::listFiles(const QString& repo, const QString& revision) {
    const quint64 ticket = m_nextTicket++;
    if (!addRepoRequest(ticket, int(Pending::Kind::Tree), repo)) return ticket;
    QUrl url = m_baseUrl;
    url.setPath(m_baseUrl.path() + QStringLiteral("/api/models/") + repo + QStringLiteral("/tree/") + revision,
                QUrl::DecodedMode);
    url.setQuery(QStringLiteral("recursive=true"));
    startTreePage(ticket, url);
    return ticket;
}

quint64 HubClient::fetchDetails(const QString& repo) {
    const quint64 ticket = m_nextTicket++;
    if (!addRepoRequest(ticket, int(Pending::Kind::Details), repo)) return ticket;
    QUrl url = m_baseUrl;
    url.setPath(m_baseUrl.path() + QStringLiteral("/api/models/") + repo, QUrl::DecodedMode);
    url.setQuery(QStringLiteral("expand[]=gguf"));
    Pending* p = m_pending.value(ticket);
    p->reply = get(url);
    connect(p->reply, &QNetworkReply::finished, this, [this, ticket, r = p->reply] { onFinished(ticket, r); });
    return ticket;
}

void HubClient::startTreePage(quint64 ticket, const QUrl& url) {
    Pending* p = m_pending.value(ticket);
    p->reply = get(url);
    ++p->pages;
    connect(p->reply, &QNetworkReply::finished, this, [this, ticket, r = p->reply] { onFinished(ticket, r); });
}

void HubClient::abort(quint64 ticket) {
    Pending* p = m_pending.take(ticket);
    if (!p) return;
    if (p->reply) {
        p->reply->disconnect(this);
        p->reply->abort();
        p->reply->deleteLater();
    }
    delete p;
}

void HubClient::onFinished(quint64 ticket, QNetworkReply* reply) {
    reply->deleteLater();
    Pending* p = m_pending.value(ticket);
    if (!p || p->reply != reply) return;
    p->reply = nullptr;
    auto fail = [&](const QString& message) {
        spdlog::warn("hub: {}", message.toStdString());
        delete m_pending.take(ticket);
        Q_EMIT failed(ticket, message);
    };
    const bool search = p->kind == Pending::Kind::Search;
    const bool details = p->kind == Pending::Kind::Details;
    const QString what = search    ? QStringLiteral("searching the hub")
                         : details ? QStringLiteral("reading the details of %1").arg(p->repo)
                                   : QStringLiteral("listing the files of %1").arg(p->repo);
    const QString error = describeReplyError(reply, what);
    if (!error.isEmpty()) return fail(error);

    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(reply->readAll(), &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return fail(QStringLiteral("%1: the answer is not JSON (%2 at byte %3)")
                        .arg(what, parseError.errorString())
                        .arg(parseError.offset));
    if (details) {
        if (!doc.isObject()) return fail(QStringLiteral("%1: expected a JSON object").arg(what));
        const QJsonObject gguf = doc.object().value(QStringLiteral("gguf")).toObject();
        HubModelDetails d;
        d.architecture = gguf.value(QStringLiteral("architecture")).toString().left(64);
        d.contextLength = jsonInt(gguf.value(QStringLiteral("context_length")));
        d.totalParameters = jsonInt(gguf.value(QStringLiteral("total")));
        const QString repo = p->repo;
        delete m_pending.take(ticket);
        Q_EMIT detailsFetched(ticket, repo, d);
        return;
    }
    if (!doc.isArray()) return fail(QStringLiteral("%1: expected a JSON list").arg(what));

    if (search) {
        QList<HubModel> models;
        for (const QJsonValue& v : doc.array()) {
            const QJsonObject o = v.toObject();
            HubModel m;
            m.id = o.value(QStringLiteral("id")).toString();
            if (m.id.isEmpty()) m.id = o.value(QStringLiteral("modelId")).toString();
            if (!isValidRepoId(m.id)) continue;
            m.downloads = jsonInt(o.value(QStringLiteral("downloads")));
            m.likes = jsonInt(o.value(QStringLiteral("likes")));
            m.lastModified = QDateTime::fromString(o.value(QStringLiteral("lastModified")).toString(), Qt::ISODate);
            for (const QJsonValue& t : o.value(QStringLiteral("tags")).toArray()) m.tags << t.toString();
            m.pipelineTag = o.value(QStringLiteral("pipeline_tag")).toString();
            const QJsonValue gated = o.value(QStringLiteral("gated"));
            m.gated = gated.isString() ? !gated.toString().isEmpty() : gated.toBool();
            models << m;
        }
        delete m_pending.take(ticket);
        Q_EMIT searchFinished(ticket, models);
        return;
    }

    for (const QJsonValue& v : doc.array()) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("type")).toString() != QStringLiteral("file")) continue;
        HubFile f;
        f.path = o.value(QStringLiteral("path")).toString();
        if (!isSafeRepoPath(f.path)) {
            spdlog::warn("hub: ignoring the unsafe file path '{}' in {}", f.path.toStdString(),
                         p->repo.toStdString());
            continue;
        }
        f.size = jsonInt(o.value(QStringLiteral("size")));
        const QJsonObject lfs = o.value(QStringLiteral("lfs")).toObject();
        if (!lfs.isEmpty()) {
            const QString oid = lfs.value(QStringLiteral("oid")).toString().toLower();
            static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
            if (hex.match(oid).hasMatch()) f.sha256 = oid;
            if (lfs.contains(QStringLiteral("size"))) f.size = jsonInt(lfs.value(QStringLiteral("size")));
        }
        p->files << f;
    }
    const QUrl next = nextPageUrl(reply);
    if (next.isValid() && next.host() == m_baseUrl.host()) {
        if (p->pages >= kMaxTreePages)
            return fail(QStringLiteral("%1: more than %2 pages of files").arg(what).arg(kMaxTreePages));
        startTreePage(ticket, next);
        return;
    }
    Pending done = *p;
    delete m_pending.take(ticket);
    Q_EMIT filesListed(ticket, done.repo, done.files);
}

QString HubClient::quantizationOf(const QString& fileName) {
    static const QRegularExpression re(
        QStringLiteral(R"((?:^|[-_./ ])((?:I?Q[1-8](?:_(?:[0-9]+|K|XXS|XS|S|M|L|XL|NL))*)|TQ[12]_0|BF16|FP16|FP32|F16|F32|MXFP4)(?=$|[-_. ]))"),
        QRegularExpression::CaseInsensitiveOption);
    QString name = fileName.section(QLatin1Char('/'), -1);
    static const QRegularExpression split(QStringLiteral(R"(-\d{5}-of-\d{5}(?=\.gguf$))"),
                                          QRegularExpression::CaseInsensitiveOption);
    name.remove(split);
    if (name.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) name.chop(5);
    QString found;
    QRegularExpressionMatchIterator it = re.globalMatch(name);
    while (it.hasNext()) found = it.next().captured(1); // the last one names the quantization
    found = found.toUpper();
    if (found == QStringLiteral("FP16")) found = QStringLiteral("F16");
    if (found == QStringLiteral("FP32")) found = QStringLiteral("F32");
    if (found.isEmpty() && fileName.contains(QLatin1Char('/'))) // "Q4_K_M/model-00001-of-00002.gguf"
        return quantizationOf(fileName.section(QLatin1Char('/'), -2, -2) + QStringLiteral(".gguf"));
    return found;
}

QList<QuantOption> HubClient::groupByQuantization(const QList<HubFile>& files) {
    static const QRegularExpression split(QStringLiteral(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)"),
                                          QRegularExpression::CaseInsensitiveOption);
    struct Part {
        int index;
        HubFile file;
    };
    QMap<QString, QList<Part>> groups; // by name without the split suffix
    QMap<QString, int> announced;
    for (const HubFile& f : files) {
        if (!f.path.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) continue;
        if (isProjectorFile(f.path)) continue; // paired below
        const QRegularExpressionMatch m = split.match(f.path);
        if (m.hasMatch()) {
            const QString key = m.captured(1) + QStringLiteral(".gguf");
            groups[key] << Part{m.captured(2).toInt(), f};
            announced[key] = std::max(announced.value(key), m.captured(3).toInt());
        } else {
            groups[f.path] << Part{1, f};
            announced[f.path] = 1;
        }
    }
    QList<QuantOption> out;
    for (auto it = groups.begin(); it != groups.end(); ++it) {
        QList<Part> parts = it.value();
        std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.index < b.index; });
        QuantOption o;
        o.name = it.key();
        o.partCount = announced.value(it.key(), 1);
        for (const Part& p : parts) {
            o.files << p.file;
            o.totalSize += p.file.size;
        }
        o.projector = preferredProjector(files, parts.first().file.path);
        o.quantization = quantizationOf(parts.first().file.path);
        if (o.quantization.isEmpty()) {
            o.quantization = o.name.section(QLatin1Char('/'), -1);
            o.quantization.chop(5);
        }
        out << o;
    }
    std::stable_sort(out.begin(), out.end(), [](const QuantOption& a, const QuantOption& b) {
        return a.totalSize != b.totalSize ? a.totalSize < b.totalSize : a.name < b.name;
    });
    return out;
}

bool HubClient::isProjectorFile(const QString& path) {
    return path.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive) &&
           path.section(QLatin1Char('/'), -1).contains(QStringLiteral("mmproj"), Qt::CaseInsensitive);
}

QList<HubFile> HubClient::projectorFiles(const QList<HubFile>& files, const QString& nearPath) {
    const QString folder = nearPath.contains(QLatin1Char('/')) ? nearPath.section(QLatin1Char('/'), 0, -2) : QString();
    auto folderRank = [&](const HubFile& f) {
        const QString own = f.path.contains(QLatin1Char('/')) ? f.path.section(QLatin1Char('/'), 0, -2) : QString();
        return own == folder ? 0 : 1;
    };
    auto typeRank = [](const HubFile& f) {
        const QString q = quantizationOf(f.path);
        if (q == QStringLiteral("F16")) return 0;
        if (q == QStringLiteral("BF16")) return 1;
        if (q == QStringLiteral("F32")) return 2;
        return 3;
    };
    QList<HubFile> out;
    for (const HubFile& f : files)
        if (isProjectorFile(f.path)) out << f;
    std::stable_sort(out.begin(), out.end(), [&](const HubFile& a, const HubFile& b) {
        if (folderRank(a) != folderRank(b)) return folderRank(a) < folderRank(b);
        if (typeRank(a) != typeRank(b)) return typeRank(a) < typeRank(b);
        if (a.size != b.size) return a.size < b.size;
        return a.path < b.path;
    });
    return out;
}

HubFile HubClient::preferredProjector(const QList<HubFile>& files, const QString& nearPath) {
    const QList<HubFile> all = projectorFiles(files, nearPath);
    return all.isEmpty() ? HubFile{} : all.first();
}

} // namespace hearth::app
