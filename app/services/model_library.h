// ModelLibrary knows the GGUF models on this machine: it scans the models folder (and files the
// user referenced elsewhere) on a worker thread, reads each file's facts, imports and deletes.
#pragma once

#include <QDateTime>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>

class QThread;

namespace hearth::app {

// What a chat template shows it can do: `tools` when it renders a tool list (it reads a `tools`
// variable), `thinking` when it writes or switches reasoning (<think>, enable_thinking,
// reasoning_content, [THINK], or gpt-oss's analysis channel).
struct TemplateSkills {
    bool tools = false;
    bool thinking = false;
};
TemplateSkills templateSkills(const std::string& chatTemplate);

struct ModelEntry {
    QString path;
    QString fileName;
    qint64 sizeBytes = 0;   // all parts of a split model together
    int parts = 1;          // files of a split model (only the first part is listed)
    QDateTime modified;
    bool external = false;  // referenced where it lies, not in the models folder
    // From the GGUF metadata; empty or 0 when the file could not be read (see error).
    QString architecture;
    QString name;
    quint64 parameterCount = 0;
    QString quantization;   // "Q4_K_M", "F16", ...
    int contextLength = 0;  // training context
    int layers = 0;
    bool hasChatTemplate = false;
    // What its chat template can do (templateSkills): take a tool list and write calls; reason
    // before it answers (a thinking block or channel, or a switch for it).
    bool tools = false;
    bool thinking = false;
    quint64 memoryBytes = 0; // weights + F16 KV cache for min(context, 4096) tokens
    // The vision projector (llama.cpp's mmproj file) beside it that serves it ("" : none): a
    // model with one takes images in chats (hearth::findProjectorFor, found at each scan).
    QString projectorPath;
    QString error;
    // What the library shows (set at each scan): the metadata name, or the file's name without
    // ".gguf" where that name says nothing (empty, or only the architecture) or another listed
    // model has it too.
    QString title;

    bool isUsable() const { return error.isEmpty(); }
    bool isVision() const { return !projectorPath.isEmpty(); }
    QString displayName() const { return !title.isEmpty() ? title : name.isEmpty() ? fileName : name; }
    bool operator==(const ModelEntry&) const = default;
};

// One entry of the curated starter list (resources/models/starter.json).
struct StarterModel {
    QString repo;
    QString title;
    QString filePattern;  // wildcard over file names in the repo, case-insensitive
    QString quantization;
    qint64 approxSizeBytes = 0;
    QString parameters;   // "1.5B"
    QString license;
    QString notes;
    QString architecture; // general.architecture of the file ("qwen2"): one the engine binds
    // The `hearth-cli synth` preset of that architecture the starter test loads in this
    // quantization (the same architecture and weight type, not always the same size).
    QString synthPreset;
    bool matches(const QString& fileName) const;
};

namespace detail {
class LibraryWorker;
}

class ModelLibrary : public QObject {
    Q_OBJECT
public:
    enum class ImportMode { Copy, Reference };
    Q_ENUM(ImportMode)

    // Scans nothing until refresh() is called.
    explicit ModelLibrary(const QString& modelsFolder, QObject* parent = nullptr);
    ~ModelLibrary() override;

    QString modelsFolder() const { return m_folder; }
    void setModelsFolder(const QString& folder); // and refresh
    // Files outside the folder that the library lists (kept in <folder>/.hearth-library.json).
    QStringList references() const { return m_references; }

    // Rescans in the background; modelsChanged() follows. Unchanged files are not read again.
    // Vision projector files (a name holding "mmproj", or general.architecture "clip") are not
    // listed as models: each is its model's projectorPath.
    void refresh();
    bool isScanning() const { return m_scanning; }
    const QList<ModelEntry>& models() const { return m_models; }
    const ModelEntry* find(const QString& path) const;

    // Copies a GGUF into the models folder (on the worker, via a .part file) or references it
    // where it is. Checks that it is a readable GGUF first. -> imported / importFailed.
    quint64 importModel(const QString& sourcePath, ImportMode mode);
    // Deletes a model file from the models folder (all parts of a split model), or forgets a
    // referenced one without touching the file. False with a reason in *error when it cannot.
    bool removeModel(const QString& path, QString* error = nullptr);
    // What removeModel(path) does: delete these files (a model in the models folder, every part
    // of a split one, even when also referenced, and its vision projector when that is in the
    // models folder and no other model uses it) or only forget a reference (deletesFiles false).
    struct Removal {
        bool deletesFiles = false;
        QStringList files; // what is deleted (empty when only forgotten)
        qint64 bytes = 0;  // their size together
        QString projector; // the projector among files, or empty
    };
    Removal removalFor(const QString& path) const;

    // The curated starter list; an error message in *error when it cannot be read.
    static QList<StarterModel> starterModels(const QString& jsonPath = QStringLiteral(":/hearth/models/starter.json"),
                                             QString* error = nullptr);
    // "1.5B", "260K", "7.2B"
    static QString formatParameters(quint64 count);

Q_SIGNALS:
    void scanningChanged(bool scanning);
    void modelsChanged();
    void importProgress(quint64 ticket, qint64 copied, qint64 total);
    void imported(quint64 ticket, const QString& path);
    void importFailed(quint64 ticket, const QString& message);

private:
    friend class detail::LibraryWorker;
    void loadReferences();
    bool saveReferences(QString* error);
    void scanFinished(quint64 generation, const QList<ModelEntry>& entries);

    QString m_folder;
    QStringList m_references;
    QList<ModelEntry> m_models;
    bool m_scanning = false;
    bool m_rescan = false;
    quint64 m_generation = 0;
    quint64 m_nextTicket = 1;
    QThread* m_thread = nullptr;
    detail::LibraryWorker* m_worker = nullptr; // lives in m_thread
};

} // namespace hearth::app

Q_DECLARE_METATYPE(hearth::app::ModelEntry)
Q_DECLARE_METATYPE(hearth::app::StarterModel)
