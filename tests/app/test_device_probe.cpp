// DeviceProbe, the one lookup of this machine's devices that every page shares: ready() comes
// once, queued (nothing is found on the caller's thread); start() again looks no further;
// whenReady() waits for it or answers at once, and never calls a receiver that is gone.
#include "services/device_probe.h"
#include "services/memory_estimate.h"

#include <QSignalSpy>
#include <QtTest>

using hearth::app::DeviceProbe;

class TestDeviceProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void readyOnceAndShared() {
        DeviceProbe probe;
        QSignalSpy ready(&probe, &DeviceProbe::ready);
        int first = 0, second = 0;
        probe.whenReady(this, [&] { ++first; });
        probe.whenReady(this, [&] { ++second; });
        QVERIFY(!probe.isReady()); // the answer comes through the event loop, never on this call
        QCOMPARE(first, 0);
        QTRY_VERIFY_WITH_TIMEOUT(probe.isReady(), 20000);
        QCOMPARE(ready.size(), 1);
        QCOMPARE(first, 1);
        QCOMPARE(second, 1);
        // The CPU is always there, and the probe's list is the process's one list.
        QVERIFY(!probe.devices().devices.empty());
        QCOMPARE(probe.devices().devices.size(), hearth::app::listDevicesOnce().devices.size());
        // Once ready: at once, and no second lookup.
        int late = 0;
        probe.whenReady(this, [&] { ++late; });
        QCOMPARE(late, 1);
        probe.start();
        QTest::qWait(50);
        QCOMPARE(ready.size(), 1);
    }

    void receiverGoneIsNotCalled() {
        DeviceProbe probe;
        int calls = 0;
        {
            QObject receiver;
            probe.whenReady(&receiver, [&] { ++calls; });
        }
        QTRY_VERIFY_WITH_TIMEOUT(probe.isReady(), 20000);
        QCOMPARE(calls, 0);
    }

    void destroyedWhileLooking() {
        auto* probe = new DeviceProbe;
        probe->start();
        delete probe; // waits for its worker; the answer it posts is dropped
        QTest::qWait(20);
    }
};

QTEST_GUILESS_MAIN(TestDeviceProbe)
#include "test_device_probe.moc"
