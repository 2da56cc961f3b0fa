// The app's embedding model (see embedding_service.h): loading and tokenizing on pool threads,
// the engine's own thread computing, results posted back to the service's thread.
#include "services/embedding_service.h"

#include "hearth/engine.h"
#include "hearth/tokenizer.h"

#include <QMetaObject>
#include <QMutex>
#include <QMutexLocker>
#include <QThreadPool>

#include <utility>

namespace hearth::app {

struct EmbeddingService::State {
    QMutex mutex;
    EmbeddingService* owner = nullptr; // null once the service is gone
    std::shared_ptr<Engine> engine;    // the model loaded last (guarded by mutex)
    quint64 generation = 0;            // of the load in force (guarded by mutex)

    // Runs `f` with the service on its thread, if it still lives then.
    template <typename F> void post(F f) {
        QMutexLocker lock(&mutex);
        if (!owner) return;
        EmbeddingService* s = owner;
        QMetaObject::invokeMethod(s, [s, f = std::move(f)] { f(s); }, Qt::QueuedConnection);
    }
};

struct EmbeddingService::Sink : EmbeddingSink {
    Sink(std::shared_ptr<State> state, quint64 ticket) : m_state(std::move(state)), m_ticket(ticket) {}

    void onEmbeddings(EmbeddingResult result) override {
        QList<QList<float>> vectors;
        vectors.reserve(qsizetype(result.vectors.size()));
        for (const std::vector<float>& v : result.vectors) vectors << QList<float>(v.begin(), v.end());
        m_state->post([t = m_ticket, vectors](EmbeddingService* s) { Q_EMIT s->embedded(t, vectors); });
    }
    void onError(const Status& error) override {
        m_state->post([t = m_ticket, why = QString::fromStdString(error.toString())](EmbeddingService* s) {
            Q_EMIT s->failed(t, why);
        });
    }

    std::shared_ptr<State> m_state;
    quint64 m_ticket;
};

EmbeddingService::EmbeddingService(QObject* parent) : QObject(parent), m_state(std::make_shared<State>()) {
    qRegisterMetaType<QList<QList<float>>>();
    m_state->owner = this;
}

EmbeddingService::~EmbeddingService() {
    std::shared_ptr<Engine> engine;
    {
        QMutexLocker lock(&m_state->mutex);
        m_state->owner = nullptr;
        engine = std::exchange(m_state->engine, nullptr);
    }
    // The engine goes here unless a pool thread still holds it (then it goes there).
}

void EmbeddingService::load(const QString& path, int threads) {
    const quint64 generation = ++m_loadGeneration;
    m_path = path;
    m_dimensions = 0;
    std::shared_ptr<Engine> old;
    {
        QMutexLocker lock(&m_state->mutex);
        m_state->generation = generation;
        old = std::exchange(m_state->engine, nullptr);
    }
    QThreadPool::globalInstance()->start([state = m_state, path, threads, generation, old = std::move(old)]() mutable {
        old.reset(); // the previous model is freed off the GUI thread
        auto fail = [&](const QString& why) {
            state->post([path, why, generation](EmbeddingService* s) {
                if (generation == s->m_loadGeneration) Q_EMIT s->loadFailed(path, why);
            });
        };
        EngineConfig config;
        config.modelPath = path.toStdString();
        config.threads = threads;
        config.maxNumSeqs = 8;
        config.prefixCaching = false;
        Result<std::unique_ptr<Engine>> created = Engine::create(config);
        if (!created) return fail(QString::fromStdString(created.status().toString()));
        std::shared_ptr<Engine> engine = std::move(created).value();
        const ModelSummary& m = engine->model();
        if (!m.embeddings)
            return fail(QStringLiteral("%1 gives no embeddings (its pooling is not one Hearth computes)")
                            .arg(QString::fromStdString(m.architecture)));
        const int dimensions = m.nEmbd;
        {
            QMutexLocker lock(&state->mutex);
            if (state->generation != generation) return; // a later load took over
            state->engine = engine;
        }
        state->post([path, dimensions, generation](EmbeddingService* s) {
            if (generation != s->m_loadGeneration) return;
            s->m_dimensions = dimensions;
            Q_EMIT s->loaded(path, dimensions);
        });
    });
}

void EmbeddingService::unload() {
    ++m_loadGeneration;
    m_path.clear();
    m_dimensions = 0;
    std::shared_ptr<Engine> old;
    {
        QMutexLocker lock(&m_state->mutex);
        m_state->generation = m_loadGeneration;
        old = std::exchange(m_state->engine, nullptr);
    }
    if (old) QThreadPool::globalInstance()->start([old = std::move(old)]() mutable { old.reset(); });
}

quint64 EmbeddingService::embed(const QStringList& texts) {
    const quint64 ticket = m_nextTicket++;
    std::shared_ptr<Engine> engine;
    {
        QMutexLocker lock(&m_state->mutex);
        engine = m_state->engine;
    }
    QThreadPool::globalInstance()->start([state = m_state, engine, texts, ticket] {
        auto fail = [&](const QString& why) {
            state->post([ticket, why](EmbeddingService* s) { Q_EMIT s->failed(ticket, why); });
        };
        if (!engine) return fail(QStringLiteral("no embedding model is loaded"));
        if (texts.isEmpty()) {
            state->post([ticket](EmbeddingService* s) { Q_EMIT s->embedded(ticket, {}); });
            return;
        }
        const int context = engine->model().contextLength;
        EmbeddingRequest request;
        for (qsizetype i = 0; i < texts.size(); ++i) {
            Result<std::vector<int32_t>> ids = engine->tokenizer().encode(texts[i].toStdString(), true, false);
            if (!ids) return fail(QString::fromStdString(ids.status().toString()));
            if (ids->empty()) return fail(QStringLiteral("text %1 gives no tokens").arg(i + 1));
            if (context > 0 && int(ids->size()) > context) ids->resize(size_t(context));
            request.inputs.push_back(std::move(*ids));
        }
        request.sink = std::make_shared<Sink>(state, ticket);
        if (Result<RequestId> id = engine->embed(std::move(request)); !id)
            fail(QString::fromStdString(id.status().toString()));
    });
    return ticket;
}

} // namespace hearth::app
