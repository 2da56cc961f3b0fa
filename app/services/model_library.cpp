// ModelLibrary: GGUF files are opened and read on a worker QThread; the library keeps the list.
#include "services/model_library.h"

#include "services/hub_client.h" // quantizationOf
#include "services/json_file.h"

#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/projector.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMetaObject>
#include <QRegularExpression>
#include <QThread>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <variant>

namespace hearth::app {

TemplateSkills templateSkills(const std::string& chatTemplate) {
    auto has = [&chatTemplate](const char* needle) { return chatTemplate.find(needle) != std::string::npos; };
    TemplateSkills skills;
    // The tool list reaches a template as `tools` ("if tools", "tools | length", "for tool in tools").
    skills.tools = has("if tools") || has("tools is not none") || has("tools|") || has("tools |") || has("in tools") ||
                   has("tools is defined");
    skills.thinking = has("<think>") || has("enable_thinking") || has("reasoning_content") ||
                      has("<|channel|>analysis") || has("[THINK]");
    return skills;
}

namespace {

const QString kLibraryFile = QStringLiteral(".hearth-library.json");

// "name-00001-of-00003.gguf" -> (base "name", index 1, count 3)
struct SplitName {
    QString base;
    int index = 0;
    int count = 0;
};

std::optional<SplitName> splitName(const QString& path) {
    static const QRegularExpression re(QStringLiteral(R"(^(.*)-(\d{5})-of-(\d{5})\.gguf$)"),
                                       QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch m = re.match(path);
    if (!m.hasMatch()) return std::nullopt;
    return SplitName{m.captured(1), m.captured(2).toInt(), m.captured(3).toInt()};
}

QString partPath(const SplitName& s, int index) {
    return QStringLiteral("%1-%2-of-%3.gguf")
        .arg(s.base)
        .arg(index, 5, 10, QLatin1Char('0'))
        .arg(s.count, 5, 10, QLatin1Char('0'));
}

// Every file of a model: the parts of a split one (those present), else just itself.
QStringList modelFiles(const QString& path) {
    const auto split = splitName(path);
    if (!split) return {path};
    QStringList out;
    for (int i = 1; i <= split->count; ++i) {
        const QString p = partPath(*split, i);
        if (QFileInfo::exists(p)) out << p;
    }
    return out;
}

QString dominantTensorType(const ModelInfo& info) {
    QString best;
    uint32_t count = 0;
    for (const auto& [type, n] : info.tensorsByType) {
        if (type == "F32" && info.tensorsByType.size() > 1) continue; // norms and biases
        if (n > count) {
            count = n;
            best = QString::fromStdString(type);
        }
    }
    return best;
}

// Reads one model's facts; never fails, the entry's error says what went wrong.
ModelEntry readEntry(const QString& path) {
    ModelEntry e;
    const QFileInfo fi(path);
    e.path = fi.absoluteFilePath();
    e.fileName = fi.fileName();
    e.modified = fi.lastModified();
    if (!fi.exists()) {
        e.error = QStringLiteral("the file is missing");
        return e;
    }
    e.sizeBytes = fi.size();
    if (const auto split = splitName(e.path)) {
        const QStringList files = modelFiles(e.path);
        e.parts = split->count;
        e.sizeBytes = 0;
        for (const QString& f : files) e.sizeBytes += QFileInfo(f).size();
        if (files.size() != split->count)
            e.error = QStringLiteral("%1 of the %2 parts are missing").arg(split->count - files.size()).arg(split->count);
    }
    Result<gguf::File> file = gguf::File::open(e.path.toStdString());
    if (!file) {
        e.error = QString::fromStdString(file.status().toString());
        return e;
    }
    if (Result<std::string> arch = file->getString("general.architecture"); arch && *arch == "clip") {
        e.architecture = QStringLiteral("clip");
        e.error = QStringLiteral("a vision projector (mmproj), not a model: put it beside its model");
        return e;
    }
    Result<ModelInfo> info = readModelInfo(*file);
    if (!info) {
        e.error = QString::fromStdString(info.status().toString());
        return e;
    }
    e.architecture = QString::fromStdString(info->architecture);
    e.name = QString::fromStdString(info->name);
    e.parameterCount = info->parameterCount;
    e.contextLength = int(info->contextLength);
    e.layers = int(info->blockCount);
    e.hasChatTemplate = info->tokenizer.hasChatTemplate;
    if (Result<std::string> tmpl = file->getString("tokenizer.chat_template"); tmpl) {
        const TemplateSkills skills = templateSkills(*tmpl);
        e.tools = skills.tools;
        e.thinking = skills.thinking;
    }
    if (info->fileType) {
        const std::string t = fileTypeName(*info->fileType);
        if (t != "unknown") e.quantization = QString::fromStdString(t);
    }
    if (e.quantization.isEmpty()) e.quantization = HubClient::quantizationOf(e.fileName);
    if (e.quantization.isEmpty()) e.quantization = dominantTensorType(*info);
    const uint32_t ctx = std::min<uint32_t>(info->contextLength ? info->contextLength : 4096, 4096);
    e.memoryBytes = estimateMemory(*info, ctx, quant::Type::F16).totalBytes();
    return e;
}

// A vision projector's file, listed as its model's projectorPath rather than as a model.
bool isProjectorEntry(const ModelEntry& e) {
    return isProjectorFileName(e.fileName.toStdString()) || e.architecture == QStringLiteral("clip");
}

// The projector beside a usable model ("" : none or unreadable folder).
QString projectorBeside(const ModelEntry& e) {
    if (!e.isUsable()) return {};
    Result<std::string> found = findProjectorFor(e.path.toStdString());
    return found ? QString::fromStdString(*found) : QString();
}

// The file's name without ".gguf" and, for a split model, without "-00001-of-00003".
QString fileTitle(const QString& fileName) {
    static const QRegularExpression ending(QStringLiteral("(-\\d{5}-of-\\d{5})?\\.gguf$"),
                                           QRegularExpression::CaseInsensitiveOption);
    QString t = fileName;
    t.remove(ending);
    return t.isEmpty() ? fileName : t;
}

// Sets each entry's title (ModelEntry::title): its metadata name where that tells it apart.
void nameEntries(QList<ModelEntry>& entries) {
    QHash<QString, int> uses;
    for (const ModelEntry& e : entries) ++uses[e.name.toCaseFolded()];
    for (ModelEntry& e : entries) {
        const bool says = !e.name.trimmed().isEmpty() && e.name.compare(e.architecture, Qt::CaseInsensitive) != 0 &&
                          uses.value(e.name.toCaseFolded()) == 1;
        e.title = says ? e.name : fileTitle(e.fileName);
    }
}

} // namespace

bool StarterModel::matches(const QString& fileName) const {
    const QRegularExpression re(QRegularExpression::wildcardToRegularExpression(filePattern),
                                QRegularExpression::CaseInsensitiveOption);
    return re.match(fileName.section(QLatin1Char('/'), -1)).hasMatch();
}

namespace detail {

// File work off the GUI thread: scanning, reading GGUF headers, copying imports.
class LibraryWorker : public QObject {
public:
    explicit LibraryWorker(ModelLibrary* library) : m_library(library) {}

    std::atomic<bool> stopping{false};

    void scan(quint64 generation, const QString& folder, const QStringList& references,
              const QList<ModelEntry>& previous) {
        QHash<QString, ModelEntry> known;
        for (const ModelEntry& e : previous) known.insert(e.path, e);
        QStringList paths;
        if (!folder.isEmpty() && QFileInfo(folder).isDir()) {
            QDirIterator it(folder, {QStringLiteral("*.gguf"), QStringLiteral("*.GGUF")}, QDir::Files,
                            QDirIterator::Subdirectories | QDirIterator::FollowSymlinks);
            while (it.hasNext() && !stopping) {
                const QString p = QFileInfo(it.next()).absoluteFilePath();
                const auto split = splitName(p);
                if (split && split->index != 1) continue; // listed through part 1
                if (isProjectorFileName(QFileInfo(p).fileName().toStdString())) continue;
                paths << p;
            }
        }
        QList<ModelEntry> out;
        for (const QString& p : references)
            if (!paths.contains(QFileInfo(p).absoluteFilePath())) paths << QFileInfo(p).absoluteFilePath();
        for (const QString& p : std::as_const(paths)) {
            if (stopping) return;
            const QFileInfo fi(p);
            auto cached = known.constFind(p);
            ModelEntry e;
            if (cached != known.cend() && cached->modified == fi.lastModified() &&
                cached->parts == 1 && cached->sizeBytes == fi.size() && fi.exists())
                e = *cached; // unchanged since the last scan
            else
                e = readEntry(p);
            if (isProjectorEntry(e)) continue;
            e.external = references.contains(p);
            e.projectorPath = projectorBeside(e); // again each scan: it may come or go alone
            out << e;
        }
        nameEntries(out);
        std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) {
            const int c = QString::compare(a.displayName(), b.displayName(), Qt::CaseInsensitive);
            return c != 0 ? c < 0 : a.path < b.path;
        });
        ModelLibrary* lib = m_library;
        QMetaObject::invokeMethod(
            lib, [lib, generation, out] { lib->scanFinished(generation, out); }, Qt::QueuedConnection);
    }

    // Checks a file to import; returns its entry (with error set when it is not a usable GGUF).
    ModelEntry check(const QString& source) { return readEntry(source); }

    // Copies every file of the model into `folder`; returns the destination of the first.
    std::variant<QString, QString> copyInto(quint64 ticket, const QString& source, const QString& folder) {
        const QStringList files = modelFiles(source);
        qint64 total = 0;
        for (const QString& f : files) total += QFileInfo(f).size();
        if (!QDir().mkpath(folder))
            return std::variant<QString, QString>(std::in_place_index<1>, QStringLiteral("cannot create %1").arg(folder));
        for (const QString& f : files)
            if (QFileInfo::exists(QDir(folder).filePath(QFileInfo(f).fileName())))
                return std::variant<QString, QString>(
                    std::in_place_index<1>,
                    QStringLiteral("%1 is already in the models folder").arg(QFileInfo(f).fileName()));
        qint64 copied = 0;
        QElapsedTimer sinceProgress;
        sinceProgress.start();
        QStringList done;
        for (const QString& f : files) {
            const QString dest = QDir(folder).filePath(QFileInfo(f).fileName());
            QFile in(f);
            QFile out(dest + QStringLiteral(".part"));
            QString error;
            if (!in.open(QIODevice::ReadOnly)) error = QStringLiteral("cannot read %1: %2").arg(f, in.errorString());
            else if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate))
                error = QStringLiteral("cannot write %1: %2").arg(out.fileName(), out.errorString());
            QByteArray buffer;
            while (error.isEmpty() && !in.atEnd()) {
                if (stopping) error = QStringLiteral("the import was stopped");
                buffer = in.read(8 << 20);
                if (buffer.isEmpty() && !in.atEnd()) error = QStringLiteral("cannot read %1").arg(f);
                if (error.isEmpty() && out.write(buffer) != buffer.size())
                    error = QStringLiteral("cannot write %1: %2").arg(out.fileName(), out.errorString());
                copied += buffer.size();
                if (sinceProgress.elapsed() > 100) {
                    sinceProgress.restart();
                    ModelLibrary* lib = m_library;
                    QMetaObject::invokeMethod(
                        lib, [lib, ticket, copied, total] { Q_EMIT lib->importProgress(ticket, copied, total); },
                        Qt::QueuedConnection);
                }
            }
            if (error.isEmpty() && !out.flush()) error = out.errorString();
            out.close();
            if (error.isEmpty() && !QFile::rename(out.fileName(), dest))
                error = QStringLiteral("cannot rename %1 to %2").arg(out.fileName(), dest);
            if (!error.isEmpty()) {
                QFile::remove(out.fileName());
                for (const QString& d : std::as_const(done)) QFile::remove(d);
                return std::variant<QString, QString>(std::in_place_index<1>, error);
            }
            done << dest;
        }
        return std::variant<QString, QString>(std::in_place_index<0>, done.first());
    }

private:
    ModelLibrary* m_library;
};

} // namespace detail

ModelLibrary::ModelLibrary(const QString& modelsFolder, QObject* parent)
    : QObject(parent), m_folder(QDir::cleanPath(modelsFolder)) {
    qRegisterMetaType<ModelEntry>();
    m_thread = new QThread(this);
    m_thread->setObjectName(QStringLiteral("hearth-model-library"));
    m_worker = new detail::LibraryWorker(this);
    m_worker->moveToThread(m_thread);
    m_thread->start();
    loadReferences();
}

ModelLibrary::~ModelLibrary() {
    m_worker->stopping = true; // a scan or a copy in progress ends early
    detail::LibraryWorker* w = m_worker;
    QMetaObject::invokeMethod(w, [] { QThread::currentThread()->quit(); }, Qt::QueuedConnection);
    m_thread->wait();
    delete m_worker;
}

void ModelLibrary::setModelsFolder(const QString& folder) {
    const QString clean = QDir::cleanPath(folder);
    if (clean == m_folder) return;
    m_folder = clean;
    loadReferences();
    refresh();
}

const ModelEntry* ModelLibrary::find(const QString& path) const {
    const QString abs = QFileInfo(path).absoluteFilePath();
    for (const ModelEntry& e : m_models)
        if (e.path == abs) return &e;
    return nullptr;
}

void ModelLibrary::refresh() {
    if (m_scanning) {
        m_rescan = true; // once the current scan is in, scan again
        return;
    }
    m_scanning = true;
    Q_EMIT scanningChanged(true);
    const quint64 generation = ++m_generation;
    detail::LibraryWorker* w = m_worker;
    QMetaObject::invokeMethod(
        w,
        [w, generation, folder = m_folder, refs = m_references, previous = m_models] {
            w->scan(generation, folder, refs, previous);
        },
        Qt::QueuedConnection);
}

void ModelLibrary::scanFinished(quint64 generation, const QList<ModelEntry>& entries) {
    if (generation != m_generation) return;
    m_scanning = false;
    const bool changed = entries != m_models;
    m_models = entries;
    if (changed) Q_EMIT modelsChanged();
    if (m_rescan) {
        m_rescan = false;
        refresh();
        return;
    }
    Q_EMIT scanningChanged(false);
}

void ModelLibrary::loadReferences() {
    m_references.clear();
    QJsonObject root;
    QString error;
    if (!readJsonObjectFile(QDir(m_folder).filePath(kLibraryFile), QStringLiteral("a list of model references"), &root, &error))
        spdlog::warn("model library: {}", error.toStdString());
    for (const QJsonValue& v : root.value(QStringLiteral("references")).toArray())
        if (!v.toString().isEmpty()) m_references << v.toString();
}

bool ModelLibrary::saveReferences(QString* error) {
    QJsonObject root;
    root.insert(QStringLiteral("references"), QJsonArray::fromStringList(m_references));
    return writeJsonObjectFile(QDir(m_folder).filePath(kLibraryFile), root, error);
}

quint64 ModelLibrary::importModel(const QString& sourcePath, ImportMode mode) {
    const quint64 ticket = m_nextTicket++;
    const QString source = QFileInfo(sourcePath).absoluteFilePath();
    detail::LibraryWorker* w = m_worker;
    const QString folder = m_folder;
    QMetaObject::invokeMethod(
        w,
        [this, w, ticket, source, folder, mode] {
            auto failed = [this, ticket](const QString& message) {
                QMetaObject::invokeMethod(
                    this, [this, ticket, message] { Q_EMIT importFailed(ticket, message); }, Qt::QueuedConnection);
            };
            const ModelEntry checked = w->check(source);
            if (isProjectorEntry(checked))
                return failed(QStringLiteral("%1 is a vision projector (mmproj), not a model: put it in the "
                                             "folder of the model it serves")
                                  .arg(source));
            if (!checked.isUsable())
                return failed(QStringLiteral("%1 is not a usable GGUF model: %2").arg(source, checked.error));
            if (mode == ImportMode::Reference) {
                QMetaObject::invokeMethod(
                    this,
                    [this, ticket, source] {
                        if (!m_references.contains(source)) m_references << source;
                        QString error;
                        if (!saveReferences(&error)) {
                            m_references.removeAll(source);
                            Q_EMIT importFailed(ticket, error);
                            return;
                        }
                        refresh();
                        Q_EMIT imported(ticket, source);
                    },
                    Qt::QueuedConnection);
                return;
            }
            auto result = w->copyInto(ticket, source, folder);
            if (result.index() == 1) return failed(std::get<1>(result));
            const QString dest = std::get<0>(result);
            QMetaObject::invokeMethod(
                this,
                [this, ticket, dest] {
                    refresh();
                    Q_EMIT imported(ticket, dest);
                },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
    return ticket;
}

ModelLibrary::Removal ModelLibrary::removalFor(const QString& path) const {
    Removal r;
    const QString abs = QFileInfo(path).absoluteFilePath();
    const QString folder = QFileInfo(m_folder).canonicalFilePath();
    const QString canonical = QFileInfo(abs).canonicalFilePath();
    if (folder.isEmpty() || canonical.isEmpty() || !canonical.startsWith(folder + QLatin1Char('/'))) return r;
    r.deletesFiles = true;
    r.files = modelFiles(abs);
    // Its projector goes with it when nothing else would use it (a projector alone is no model).
    const ModelEntry* e = find(abs);
    const QString projector = e && !e->projectorPath.isEmpty() ? QFileInfo(e->projectorPath).canonicalFilePath() : QString();
    bool shared = false;
    for (const ModelEntry& other : m_models)
        if (other.path != abs && !other.projectorPath.isEmpty() &&
            QFileInfo(other.projectorPath).canonicalFilePath() == projector)
            shared = true;
    if (!projector.isEmpty() && !shared && projector.startsWith(folder + QLatin1Char('/'))) {
        r.projector = e->projectorPath;
        r.files << r.projector;
    }
    for (const QString& f : r.files) r.bytes += QFileInfo(f).size();
    return r;
}

bool ModelLibrary::removeModel(const QString& path, QString* error) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    const Removal removal = removalFor(path);
    if (m_references.contains(abs)) {
        m_references.removeAll(abs);
        if (!saveReferences(error)) return false;
        if (!removal.deletesFiles) {
            refresh();
            return true;
        }
        // Referenced but inside the models folder: the scan would list it again, so it goes too.
    }
    if (!removal.deletesFiles) {
        if (error) *error = QStringLiteral("%1 is not in the models folder").arg(path);
        return false;
    }
    for (const QString& f : removal.files) {
        if (!QFile::remove(f)) {
            if (error) *error = QStringLiteral("cannot delete %1").arg(f);
            refresh();
            return false;
        }
    }
    refresh();
    return true;
}

QList<StarterModel> ModelLibrary::starterModels(const QString& jsonPath, QString* error) {
    QJsonObject root;
    if (!QFile::exists(jsonPath)) {
        if (error) *error = QStringLiteral("cannot read %1").arg(jsonPath);
        return {};
    }
    if (!readJsonObjectFile(jsonPath, QStringLiteral("a JSON object"), &root, error)) return {};
    QList<StarterModel> out;
    for (const QJsonValue& v : root.value(QStringLiteral("models")).toArray()) {
        const QJsonObject o = v.toObject();
        StarterModel m;
        m.repo = o.value(QStringLiteral("repo")).toString();
        m.title = o.value(QStringLiteral("title")).toString();
        m.filePattern = o.value(QStringLiteral("filePattern")).toString();
        m.quantization = o.value(QStringLiteral("quantization")).toString();
        m.approxSizeBytes = qint64(o.value(QStringLiteral("approxSizeBytes")).toDouble());
        m.parameters = o.value(QStringLiteral("parameters")).toString();
        m.license = o.value(QStringLiteral("license")).toString();
        m.notes = o.value(QStringLiteral("notes")).toString();
        m.architecture = o.value(QStringLiteral("architecture")).toString();
        m.synthPreset = o.value(QStringLiteral("synthPreset")).toString();
        if (!HubClient::isValidRepoId(m.repo) || m.filePattern.isEmpty()) {
            spdlog::warn("model library: skipping a starter entry without a valid repo and file pattern");
            continue;
        }
        out << m;
    }
    return out;
}

QString ModelLibrary::formatParameters(quint64 count) {
    if (count == 0) return {};
    const struct {
        double scale;
        const char* suffix;
    } units[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
    for (const auto& u : units) {
        if (double(count) >= u.scale) {
            const double v = double(count) / u.scale;
            const int decimals = v < 10.0 && std::abs(v - std::round(v)) >= 0.05 ? 1 : 0;
            return QString::number(v, 'f', decimals) + QLatin1String(u.suffix);
        }
    }
    return QString::number(count);
}

} // namespace hearth::app
