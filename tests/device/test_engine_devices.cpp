// The engine on every GPU device under test (tests/common/devices_under_test.h) through the public
// API (EngineConfig.device), all layers on it or split with the CPU: stories260K's greedy tokens
// equal the reference's and n > 1 choices (forked K/V blocks copied on the device) match single
// requests. Bad device ids (malformed, absent, an unknown kind, a CUDA id without a driver) fail
// at create with a status on every machine, never a crash.
#include "hearth/devices.h"
#include "hearth/engine.h"

#include "devices_under_test.h"
#include "engine_device_checks.h"
#include "test_support.h"

#include <QtTest>

using namespace hearth;

class TestEngineDevices : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf")); }

    void generate_data() {
        QTest::addColumn<QString>("device");
        QTest::addColumn<int>("gpuLayers");
        test::deviceRows("all layers", [](QTestData& r) { r << -1; });
        test::deviceRows("3 of 5 layers", [](QTestData& r) { r << 3; });
        test::deviceRows("0 layers", [](QTestData& r) { r << 0; });
    }
    void generate() {
        HEARTH_FETCH_DEVICE(id);
        QFETCH(int, gpuLayers);
        auto e = Engine::create(test::storiesConfig(id, gpuLayers));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        Engine& engine = **e;
        QCOMPARE(engine.model().device, id);
        QCOMPARE(engine.model().gpuLayers, gpuLayers < 0 ? 5 : gpuLayers);
        test::checkGreedyAndForkedChoices(engine);
    }

    void badDevices() {
        for (const char* id : {"vulkan:99", "cuda:99"}) {
            auto missing = Engine::create(test::storiesConfig(id, -1));
            QVERIFY(!missing.isOk());
            qInfo("%s: %s", id, missing.status().toString().c_str());
        }
        for (const char* id : {"tpu:0", "vulkan:x"}) {
            auto bad = Engine::create(test::storiesConfig(id, -1));
            QCOMPARE(bad.status().code(), ErrorCode::InvalidArgument);
        }
        auto malformed = Engine::create(test::storiesConfig("cuda:x", -1));
        QVERIFY(!malformed.isOk());
        qInfo("cuda:x: %s", malformed.status().toString().c_str());
        if (!findDevice(listDevices(), "cuda:0")) {
            auto none = Engine::create(test::storiesConfig("cuda:0", -1));
            QVERIFY(!none.isOk());
            qInfo("cuda:0 without a device: %s", none.status().toString().c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestEngineDevices)
#include "test_engine_devices.moc"
