// DeviceProbe: this machine's compute devices and the RAM free now, looked up once on a worker
// thread (a GPU driver can take seconds to answer) and handed to every page that asks, so that no
// view starts a thread of its own for them.
#pragma once

#include "hearth/devices.h"

#include <QObject>

#include <thread>
#include <utility>

namespace hearth::app {

class DeviceProbe : public QObject {
    Q_OBJECT
public:
    explicit DeviceProbe(QObject* parent = nullptr);
    ~DeviceProbe() override; // waits for the worker

    // Starts the lookup unless it ran already; ready() follows, queued.
    void start();
    bool isReady() const { return m_ready; }
    const DeviceList& devices() const { return m_devices; }
    qint64 availableRamBytes() const { return m_ram; }

    // fn() once the devices are known: now when they are, else when ready() comes (not after
    // `context` is gone). Starts the lookup.
    template <typename Fn> void whenReady(QObject* context, Fn fn) {
        if (m_ready) return fn();
        connect(this, &DeviceProbe::ready, context, std::move(fn), Qt::SingleShotConnection);
        start();
    }

Q_SIGNALS:
    void ready();

private:
    std::thread m_worker;
    bool m_started = false;
    bool m_ready = false;
    DeviceList m_devices;
    qint64 m_ram = 0;
};

} // namespace hearth::app
