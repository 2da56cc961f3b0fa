// How work on a pool thread reaches the QObject that started it, while that object lives: the
// object owns a PoolRelay (shared with the work) and detaches it when destroyed; a posted call
// runs on the object's thread, or not at all once it is gone.
#pragma once

#include <QMetaObject>
#include <QMutex>
#include <QMutexLocker>

#include <utility>

namespace hearth::app {

template <typename T> class PoolRelay {
public:
    explicit PoolRelay(T* target) : m_target(target) {}

    // The target is going: nothing posted from now on reaches it.
    void detach() {
        QMutexLocker lock(&m_mutex);
        m_target = nullptr;
    }

    bool attached() const {
        QMutexLocker lock(&m_mutex);
        return m_target != nullptr;
    }

    // Calls fn(target) on the target's thread, later (queued; dropped with the target).
    template <typename F> void post(F&& fn) {
        QMutexLocker lock(&m_mutex);
        if (!m_target) return;
        T* target = m_target;
        QMetaObject::invokeMethod(
            target, [target, fn = std::forward<F>(fn)]() mutable { fn(target); }, Qt::QueuedConnection);
    }

private:
    mutable QMutex m_mutex;
    T* m_target;
};

} // namespace hearth::app
