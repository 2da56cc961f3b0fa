// DeviceProbe: the lookup runs once on a std::thread, joined on destruction; its result comes
// back to the probe's thread as a queued call.
#include "services/device_probe.h"

#include "services/memory_estimate.h"

#include <QMetaObject>
#include <QPointer>

namespace hearth::app {

DeviceProbe::DeviceProbe(QObject* parent) : QObject(parent) {}

DeviceProbe::~DeviceProbe() {
    if (m_worker.joinable()) m_worker.join();
}

void DeviceProbe::start() {
    if (std::exchange(m_started, true)) return;
    QPointer<DeviceProbe> self(this);
    m_worker = std::thread([self] {
        const DeviceList devices = listDevicesOnce();
        const qint64 ram = ::hearth::app::availableRamBytes(); // the free function, not the member
        QMetaObject::invokeMethod(
            self.data(),
            [self, devices, ram] {
                if (!self) return;
                self->m_devices = devices;
                self->m_ram = ram;
                self->m_ready = true;
                Q_EMIT self->ready();
            },
            Qt::QueuedConnection);
    });
}

} // namespace hearth::app
