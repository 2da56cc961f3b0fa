// The engine on a Vulkan device through the public API (EngineConfig.device = "vulkan:0"), all
// layers on it or split with the CPU: stories260K's greedy tokens equal the reference's, n > 1
// choices (forked K/V blocks copied on the device) match single requests, and a bad device id
// fails at create with a clear status. Skips with a message when there is no Vulkan device.
#include "hearth/devices.h"
#include "hearth/engine.h"

#include "engine_device_checks.h"
#include "test_support.h"

#include <QtTest>

using namespace hearth;

namespace {
EngineConfig config(const std::string& device, int gpuLayers) {
    return hearth::test::storiesConfig(device, gpuLayers);
}
} // namespace

class TestEngineVulkan : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const DeviceList list = listDevices();
        if (!findDevice(list, "vulkan:0")) {
            std::string why = "no vulkan:0";
            for (const std::string& n : list.notes)
                if (n.rfind("Vulkan", 0) == 0) why = n;
            QSKIP(why.c_str());
        }
    }

    void generate_data() {
        QTest::addColumn<int>("gpuLayers");
        QTest::newRow("all layers") << -1;
        QTest::newRow("3 of 5 layers") << 3;
        QTest::newRow("0 layers") << 0;
    }
    void generate() {
        QFETCH(int, gpuLayers);
        auto e = Engine::create(config("vulkan:0", gpuLayers));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        Engine& engine = **e;
        hearth::test::checkGreedyAndForkedChoices(engine);
    }

    void badDevices() {
        auto missing = Engine::create(config("vulkan:99", -1));
        QVERIFY(!missing.isOk());
        qInfo("vulkan:99: %s", missing.status().toString().c_str());
        auto bogus = Engine::create(config("tpu:0", -1));
        QCOMPARE(bogus.status().code(), ErrorCode::InvalidArgument);
        auto malformed = Engine::create(config("vulkan:x", -1));
        QCOMPARE(malformed.status().code(), ErrorCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestEngineVulkan)
#include "test_engine_vulkan.moc"
