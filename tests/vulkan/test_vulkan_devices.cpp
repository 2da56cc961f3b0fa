// The public device list (hearth::listDevices) with the Vulkan backend built in: each Vulkan
// device appears as "vulkan:N" with its name, type and memory, or a note says why there is none.
// On Mesa lavapipe (a CPU Vulkan driver) the device has type "cpu" and uses system RAM.
#include "hearth/devices.h"

#include <QtTest>

using namespace hearth;

class TestVulkanDevices : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void vulkanDevicesAreListed() {
        const DeviceList list = listDevices();
        std::vector<const DeviceDescription*> vulkan;
        for (const DeviceDescription& d : list.devices) {
            qInfo("%s: %s (%s), %llu MiB, %llu MiB free", d.id.c_str(), d.name.c_str(), d.type.c_str(),
                  static_cast<unsigned long long>(d.totalMemory >> 20),
                  static_cast<unsigned long long>(d.freeMemory >> 20));
            if (d.kind == DeviceKind::Vulkan) vulkan.push_back(&d);
        }
        std::string vulkanNote;
        for (const std::string& n : list.notes) {
            qInfo("note: %s", n.c_str());
            if (n.rfind("Vulkan", 0) == 0) vulkanNote = n;
        }
        QVERIFY2(vulkanNote.find("not built") == std::string::npos, vulkanNote.c_str());
        if (vulkan.empty()) {
            QVERIFY(!vulkanNote.empty()); // the reason is given
            QSKIP(qPrintable(QStringLiteral("no Vulkan device: ") + QString::fromStdString(vulkanNote)));
        }
        const DeviceDescription* first = findDevice(list, "vulkan:0");
        QVERIFY(first != nullptr);
        QCOMPARE(first->index, 0);
        bool lavapipe = false;
        for (size_t i = 0; i < vulkan.size(); ++i) {
            const DeviceDescription& d = *vulkan[i];
            QCOMPARE(d.id, "vulkan:" + std::to_string(i));
            QVERIFY(!d.name.empty());
            QVERIFY(d.totalMemory > 0);
            QVERIFY(d.freeMemory <= d.totalMemory);
            if (d.name.find("llvmpipe") != std::string::npos) {
                lavapipe = true;
                QCOMPARE(d.type, std::string("cpu"));
                QVERIFY(d.sharesHostMemory);
                QVERIFY(d.freeMemory > 0);
            }
        }
        if (!lavapipe) qInfo("no lavapipe device here; the type check for it was not run");
    }

    // With no driver to load (the loader pointed at a missing ICD file) the list still comes
    // back: no Vulkan device, and a note with the reason. Runs last: it changes the environment.
    void noDriverGivesANote() {
        qputenv("VK_ICD_FILENAMES", "/nonexistent/hearth_test_icd.json");
        qputenv("VK_DRIVER_FILES", "/nonexistent/hearth_test_icd.json");
        const DeviceList list = listDevices();
        for (const DeviceDescription& d : list.devices) QVERIFY(d.kind != DeviceKind::Vulkan);
        bool noted = false;
        for (const std::string& n : list.notes) {
            qInfo("note: %s", n.c_str());
            noted = noted || n.rfind("Vulkan: ", 0) == 0;
        }
        QVERIFY(noted);
    }
};

QTEST_GUILESS_MAIN(TestVulkanDevices)
#include "test_vulkan_devices.moc"
