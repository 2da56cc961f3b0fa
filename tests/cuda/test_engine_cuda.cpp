// The engine on a CUDA device through the public API (EngineConfig.device = "cuda:0", its step
// graphs run by the runner on cuda::CudaGraphDevice, every layer on it or split with the CPU):
// stories260K's greedy tokens equal the reference's and n > 1 choices (forked K/V blocks copied on
// the device) match single requests. The error cases (a
// malformed id, no such device, no driver) run everywhere and must give a status, not a crash;
// the device cases skip with the runtime's reason when there is no CUDA device.
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

class TestEngineCuda : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf")); }

    void errorsAreStatuses() {
        auto malformed = Engine::create(config("cuda:x", -1));
        QVERIFY(!malformed.isOk());
        qInfo("cuda:x: %s", malformed.status().toString().c_str());
        auto missing = Engine::create(config("cuda:99", -1));
        QVERIFY(!missing.isOk());
        qInfo("cuda:99: %s", missing.status().toString().c_str());
        if (!findDevice(listDevices(), "cuda:0")) {
            auto none = Engine::create(config("cuda:0", -1));
            QVERIFY(!none.isOk());
            qInfo("cuda:0 without a device: %s", none.status().toString().c_str());
        }
    }

    void generate_data() {
        QTest::addColumn<int>("gpuLayers");
        QTest::newRow("all layers") << -1;
        QTest::newRow("3 of 5 layers") << 3;
    }
    void generate() {
        QFETCH(int, gpuLayers);
        const DeviceList list = listDevices();
        if (!findDevice(list, "cuda:0")) {
            std::string why = "no cuda:0";
            for (const std::string& n : list.notes)
                if (n.rfind("CUDA", 0) == 0) why = n;
            QSKIP(why.c_str());
        }
        auto e = Engine::create(config("cuda:0", gpuLayers));
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        Engine& engine = **e;
        QCOMPARE(engine.model().device, std::string("cuda:0"));
        QCOMPARE(engine.model().gpuLayers, gpuLayers < 0 ? 5 : gpuLayers);
        hearth::test::checkGreedyAndForkedChoices(engine);
    }
};

QTEST_GUILESS_MAIN(TestEngineCuda)
#include "test_engine_cuda.moc"
