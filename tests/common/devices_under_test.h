// The GPU devices that the per-device tests (tests/device) run every check on: the ids in
// HEARTH_TEST_DEVICES (separated by spaces or commas), else the first Vulkan and the first CUDA
// device hearth::listDevices() finds. Each test function's rows are made once per device; with no
// device there is one row per case, which skips with the backends' reasons.
#pragma once

#include "hearth/devices.h"

#include <QtTest>

#include <string>
#include <vector>

namespace hearth::test {

struct DevicesUnderTest {
    std::vector<std::string> ids;
    std::string whyNone; // set when ids is empty
};

inline const DevicesUnderTest& devicesUnderTest() {
    static const DevicesUnderTest found = [] {
        DevicesUnderTest d;
        const QByteArray chosen = qgetenv("HEARTH_TEST_DEVICES");
        if (!chosen.trimmed().isEmpty()) {
            for (const QByteArray& id : QByteArray(chosen).replace(',', ' ').simplified().split(' '))
                d.ids.push_back(id.toStdString());
            return d;
        }
        const DeviceList list = listDevices();
        for (DeviceKind kind : {DeviceKind::Vulkan, DeviceKind::Cuda})
            for (const DeviceDescription& dev : list.devices)
                if (dev.kind == kind) {
                    d.ids.push_back(dev.id);
                    break;
                }
        if (d.ids.empty()) {
            d.whyNone = "no Vulkan or CUDA device";
            for (const std::string& note : list.notes) d.whyNone += "; " + note;
        }
        return d;
    }();
    return found;
}

inline bool isCudaId(const std::string& id) { return id.rfind("cuda:", 0) == 0; }

// Rows named "<device> <name>" for each device under test, the device as the first cell (the
// column "device", QString, added first); `fill(QTestData&)` adds the row's other cells. With no
// device, one row `name` with an empty device.
template <class Fill> void deviceRows(const QString& name, Fill fill) {
    const DevicesUnderTest& d = devicesUnderTest();
    if (d.ids.empty()) {
        fill(QTest::newRow(qPrintable(name)) << QString());
        return;
    }
    for (const std::string& id : d.ids)
        fill(QTest::newRow(qPrintable(QString::fromStdString(id) + QLatin1Char(' ') + name)) << QString::fromStdString(id));
}

template <class Fill> void deviceRows(const char* name, Fill fill) { deviceRows(QString::fromLatin1(name), fill); }

} // namespace hearth::test

// Fetches the row's device into `var` (std::string), or skips the row when there is none.
#define HEARTH_FETCH_DEVICE(var)                                                                    \
    QFETCH(QString, device);                                                                        \
    if (device.isEmpty()) QSKIP(::hearth::test::devicesUnderTest().whyNone.c_str());                \
    const std::string var = device.toStdString()
