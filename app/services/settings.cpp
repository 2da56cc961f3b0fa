// Settings: QSettings in INI format for preferences, owner-only files for secrets.
#include "services/settings.h"

#include "services/data_dir.h"
#include "services/sampling_json.h"
#include "services/secret_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QUrl>


#include <algorithm>

namespace hearth::app {

namespace {

const QString kModelsFolder = QStringLiteral("models/folder");
const QString kHubBaseUrl = QStringLiteral("hub/baseUrl");
const QString kServerHost = QStringLiteral("server/host");
const QString kServerPort = QStringLiteral("server/port");
const QString kLoadContext = QStringLiteral("load/contextLength");
const QString kLoadKvType = QStringLiteral("load/kvType");
const QString kLoadSpeculation = QStringLiteral("load/speculation");
const QString kLoadThreads = QStringLiteral("load/threads");
const QString kLoadGpuLayers = QStringLiteral("load/gpuLayers");
const QString kLoadCpuMoeLayers = QStringLiteral("load/cpuMoeLayers");
const QString kLoadMmap = QStringLiteral("load/useMmap");
const QString kLoadBatch = QStringLiteral("load/batchSize");
const QString kLoadDevice = QStringLiteral("load/device");
const QString kLoadKvMemory = QStringLiteral("load/kvMemoryBytes");
const QString kLoadParallel = QStringLiteral("load/maxParallel");
const QString kDownloadsParallel = QStringLiteral("downloads/parallel");
const QString kChatSampling = QStringLiteral("chat/sampling");
const QString kChatSystemPrompt = QStringLiteral("chat/systemPrompt");
const QString kServerCors = QStringLiteral("server/corsOrigins");
const QString kIdleUnload = QStringLiteral("load/idleUnloadMinutes");
const QString kTheme = QStringLiteral("ui/theme");
const QString kWelcomeDone = QStringLiteral("ui/welcomeDone");
const QString kLastModel = QStringLiteral("load/lastModel");
const QString kEmbeddingModel = QStringLiteral("files/embeddingModel");

const QString kTokenFile = QStringLiteral("hub-token");
const QString kApiKeyFile = QStringLiteral("server-api-key");

QString defaultIniPath() { return QDir(resolveDataDir()).filePath(QStringLiteral("hearth.ini")); }


} // namespace

Settings::Settings(const QString& iniPath, QObject* parent)
    : QObject(parent),
      m_settings(std::make_unique<QSettings>(iniPath.isEmpty() ? defaultIniPath() : iniPath,
                                             QSettings::IniFormat)) {}

Settings::~Settings() { m_settings->sync(); }

QString Settings::filePath() const { return m_settings->fileName(); }

void Settings::sync() { m_settings->sync(); }

void Settings::setValue(const QString& key, const QVariant& value) {
    if (m_settings->value(key) == value) return;
    m_settings->setValue(key, value);
    Q_EMIT changed(key);
}

QString Settings::modelsFolder() const {
    const QString beside = QFileInfo(m_settings->fileName()).absoluteDir().filePath(QStringLiteral("models"));
    return m_settings->value(kModelsFolder, beside).toString();
}

void Settings::setModelsFolder(const QString& folder) {
    setValue(kModelsFolder, QDir::cleanPath(folder));
}

QUrl Settings::hubBaseUrl() const {
    // The environment wins (tests point it at a loopback hub; mirrors for a whole machine).
    const QUrl env(qEnvironmentVariable("HEARTH_HUB_URL").trimmed());
    if (env.isValid() && !env.host().isEmpty() &&
        (env.scheme() == QStringLiteral("http") || env.scheme() == QStringLiteral("https"))) {
        QUrl clean = env.adjusted(QUrl::StripTrailingSlash | QUrl::RemoveQuery | QUrl::RemoveFragment);
        if (clean.path() == QStringLiteral("/")) clean.setPath(QString());
        return clean;
    }
    const QUrl url(m_settings->value(kHubBaseUrl, QStringLiteral("https://huggingface.co")).toString());
    return url.isValid() ? url : QUrl(QStringLiteral("https://huggingface.co"));
}

bool Settings::setHubBaseUrl(const QUrl& url) {
    const QString scheme = url.scheme().toLower();
    if (!url.isValid() || url.host().isEmpty() ||
        (scheme != QStringLiteral("https") && scheme != QStringLiteral("http"))) {
        m_lastError = QStringLiteral("'%1' is not an http(s) address").arg(url.toString());
        return false;
    }
    QUrl clean = url.adjusted(QUrl::StripTrailingSlash | QUrl::RemoveQuery | QUrl::RemoveFragment);
    if (clean.path() == QStringLiteral("/")) clean.setPath(QString());
    setValue(kHubBaseUrl, clean.toString());
    return true;
}

QString Settings::secretPath(const QString& name) const {
    return QFileInfo(m_settings->fileName()).absoluteDir().filePath(name);
}

QString Settings::accessTokenPath() const { return secretPath(kTokenFile); }
QString Settings::serverApiKeyPath() const { return secretPath(kApiKeyFile); }

QString Settings::readSecret(const QString& name) const { return readSecretFile(secretPath(name)); }

bool Settings::writeSecret(const QString& name, const QString& value) {
    if (!writeSecretFile(secretPath(name), value, &m_lastError)) return false;
    Q_EMIT changed(name);
    return true;
}

QString Settings::accessToken() const { return readSecret(kTokenFile); }
bool Settings::setAccessToken(const QString& token) { return writeSecret(kTokenFile, token); }
QString Settings::serverApiKey() const { return readSecret(kApiKeyFile); }
bool Settings::setServerApiKey(const QString& key) { return writeSecret(kApiKeyFile, key); }

QString Settings::serverHost() const {
    return m_settings->value(kServerHost, QStringLiteral("127.0.0.1")).toString();
}

void Settings::setServerHost(const QString& host) { setValue(kServerHost, host.trimmed()); }

int Settings::serverPort() const {
    const int port = m_settings->value(kServerPort, kDefaultServerPort).toInt();
    return port >= 1 && port <= 65535 ? port : kDefaultServerPort;
}

bool Settings::setServerPort(int port) {
    if (port < 1 || port > 65535) {
        m_lastError = QStringLiteral("port %1 is outside 1..65535").arg(port);
        return false;
    }
    setValue(kServerPort, port);
    return true;
}

LoadSettings Settings::loadSettings() const {
    LoadSettings s;
    s.contextLength = std::max(0, m_settings->value(kLoadContext, s.contextLength).toInt());
    s.kvType = m_settings->value(kLoadKvType, s.kvType).toString();
    s.threads = std::max(0, m_settings->value(kLoadThreads, s.threads).toInt());
    s.gpuLayers = std::max(-1, m_settings->value(kLoadGpuLayers, s.gpuLayers).toInt());
    s.cpuMoeLayers = std::max(-1, m_settings->value(kLoadCpuMoeLayers, s.cpuMoeLayers).toInt());
    s.device = m_settings->value(kLoadDevice, s.device).toString();
    if (s.device.isEmpty()) s.device = QStringLiteral("cpu");
    s.kvMemoryBytes = m_settings->value(kLoadKvMemory, s.kvMemoryBytes).toULongLong();
    s.maxParallel = std::max(1, m_settings->value(kLoadParallel, s.maxParallel).toInt());
    s.useMmap = m_settings->value(kLoadMmap, s.useMmap).toBool();
    s.batchSize = std::clamp(m_settings->value(kLoadBatch, s.batchSize).toInt(), 16, 8192);
    s.speculation = m_settings->value(kLoadSpeculation, s.speculation).toBool();
    return s;
}

void Settings::setLoadSettings(const LoadSettings& s) {
    setValue(kLoadContext, s.contextLength);
    setValue(kLoadKvType, s.kvType);
    setValue(kLoadThreads, s.threads);
    setValue(kLoadGpuLayers, s.gpuLayers);
    setValue(kLoadCpuMoeLayers, s.cpuMoeLayers);
    setValue(kLoadDevice, s.device);
    setValue(kLoadKvMemory, s.kvMemoryBytes);
    setValue(kLoadParallel, s.maxParallel);
    setValue(kLoadMmap, s.useMmap);
    setValue(kLoadBatch, s.batchSize);
    setValue(kLoadSpeculation, s.speculation);
}

int Settings::parallelDownloads() const {
    return std::clamp(m_settings->value(kDownloadsParallel, 1).toInt(), 1, 8);
}

void Settings::setParallelDownloads(int n) { setValue(kDownloadsParallel, std::clamp(n, 1, 8)); }

Sampling Settings::chatSampling() const {
    return samplingFromJson(m_settings->value(kChatSampling, QStringLiteral("{}")).toString(), Sampling{});
}

void Settings::setChatSampling(const Sampling& sampling) { setValue(kChatSampling, samplingToJson(sampling)); }

QString Settings::defaultSystemPrompt() const { return m_settings->value(kChatSystemPrompt).toString(); }
void Settings::setDefaultSystemPrompt(const QString& text) { setValue(kChatSystemPrompt, text); }

QStringList Settings::corsOrigins() const {
    QStringList out;
    for (const QString& o : m_settings->value(kServerCors).toStringList())
        if (!o.trimmed().isEmpty()) out << o.trimmed();
    return out;
}

void Settings::setCorsOrigins(const QStringList& origins) {
    QStringList clean;
    for (const QString& o : origins)
        if (!o.trimmed().isEmpty()) clean << o.trimmed();
    setValue(kServerCors, clean);
}

int Settings::idleUnloadMinutes() const {
    return std::clamp(m_settings->value(kIdleUnload, 0).toInt(), 0, 24 * 60);
}

void Settings::setIdleUnloadMinutes(int minutes) { setValue(kIdleUnload, std::clamp(minutes, 0, 24 * 60)); }

QString Settings::theme() const {
    const QString t = m_settings->value(kTheme, QStringLiteral("system")).toString();
    return t == QStringLiteral("light") || t == QStringLiteral("dark") ? t : QStringLiteral("system");
}

void Settings::setTheme(const QString& theme) { setValue(kTheme, theme); }

bool Settings::welcomeDone() const { return m_settings->value(kWelcomeDone, false).toBool(); }
void Settings::setWelcomeDone(bool done) { setValue(kWelcomeDone, done); }

QString Settings::lastModelPath() const { return m_settings->value(kLastModel).toString(); }
void Settings::setLastModelPath(const QString& path) { setValue(kLastModel, path); }

QString Settings::embeddingModelPath() const { return m_settings->value(kEmbeddingModel).toString(); }
void Settings::setEmbeddingModelPath(const QString& path) { setValue(kEmbeddingModel, path); }

// Keys under draftModels/ are the model paths percent-encoded (a path's slashes would be groups).
static QString draftKey(const QString& modelPath) {
    return QStringLiteral("draftModels/") + QString::fromLatin1(QUrl::toPercentEncoding(modelPath));
}

QString Settings::draftModelFor(const QString& modelPath) const {
    return modelPath.isEmpty() ? QString() : m_settings->value(draftKey(modelPath)).toString();
}

void Settings::setDraftModelFor(const QString& modelPath, const QString& draftPath) {
    if (modelPath.isEmpty()) return;
    if (draftPath.isEmpty()) {
        m_settings->remove(draftKey(modelPath));
        Q_EMIT changed(draftKey(modelPath));
        return;
    }
    setValue(draftKey(modelPath), draftPath);
}

} // namespace hearth::app
