// A local embedding model for the app's own use (retrieval over attached files): an engine of its
// own, apart from the chat's model, loaded and asked on pool threads so that nothing blocks the
// GUI thread; vectors come back as signals carrying the request's ticket.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>

namespace hearth::app {

class EmbeddingService : public QObject {
    Q_OBJECT
public:
    explicit EmbeddingService(QObject* parent = nullptr);
    ~EmbeddingService() override; // frees the engine (requests in flight are dropped unheard)

    // Loads a GGUF that gives embeddings (bert, nomic-bert, or a decoder with a pooling type):
    // loaded(path, dimensions) or loadFailed(path, why). A model loaded before is let go.
    void load(const QString& path, int threads = 0);
    // Lets the model go (searches rank by words again).
    void unload();
    bool isLoaded() const { return m_dimensions > 0; }
    QString modelPath() const { return m_path; }
    int dimensions() const { return m_dimensions; }

    // One L2-normalized vector per text, in order (a text longer than the model's context is cut
    // to it): embedded(ticket, vectors) or failed(ticket, why), never before this returns.
    quint64 embed(const QStringList& texts);

Q_SIGNALS:
    void loaded(const QString& path, int dimensions);
    void loadFailed(const QString& path, const QString& why);
    void embedded(quint64 ticket, const QList<QList<float>>& vectors);
    void failed(quint64 ticket, const QString& why);

private:
    struct State; // the engine and the way back to this object, shared with pool threads
    struct Sink;  // the engine's answer to one request
    std::shared_ptr<State> m_state;
    QString m_path;
    int m_dimensions = 0;
    quint64 m_nextTicket = 1;
    quint64 m_loadGeneration = 0;
};

} // namespace hearth::app
