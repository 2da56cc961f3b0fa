// fallbackReasonFor and kvTypeRefusal: what the settings page warns about before a load, from
// described devices (Q8_0 K/V on CUDA, weight types without GPU kernels, wide heads,
// a device that is not there), and checked against the engine itself on a real Vulkan device
// when there is one: a combination predicted to fall back leaves device notes after the load,
// one predicted to stay on the GPU leaves none.
#include "services/load_fallback.h"
#include "services/memory_estimate.h"
#include "test_support.h"

#include "hearth/engine.h"
#include "hearth/gguf.h"

#include <QtTest>

using namespace hearth;
using namespace hearth::app;

namespace {

DeviceList describedDevices() {
    DeviceList list;
    DeviceDescription cpu;
    cpu.id = "cpu";
    cpu.totalMemory = uint64_t(16) << 30;
    DeviceDescription vk;
    vk.kind = DeviceKind::Vulkan;
    vk.id = "vulkan:0";
    vk.totalMemory = uint64_t(8) << 30;
    DeviceDescription cu;
    cu.kind = DeviceKind::Cuda;
    cu.id = "cuda:0";
    cu.totalMemory = uint64_t(8) << 30;
    list.devices = {cpu, vk, cu};
    return list;
}

LoadSettings on(const QString& device, const QString& kv) {
    LoadSettings ls;
    ls.device = device;
    ls.kvType = kv;
    ls.gpuLayers = -1;
    return ls;
}

} // namespace

class TestLoadFallback : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void kvTypes() {
        const DeviceList list = describedDevices();
        for (const DeviceDescription& d : list.devices) {
            QVERIFY(kvTypeRefusal(d, QStringLiteral("f16")).isEmpty());
            QVERIFY(kvTypeRefusal(d, QStringLiteral("f32")).isEmpty());
            // Every device keeps Q8_0 for heads of whole 32-value blocks (or heads not known);
            // CUDA's cache takes no others.
            QVERIFY(kvTypeRefusal(d, QStringLiteral("q8_0")).isEmpty());
            QVERIFY(kvTypeRefusal(d, QStringLiteral("q8_0"), 128).isEmpty());
            const QString q8 = kvTypeRefusal(d, QStringLiteral("q8_0"), 80);
            QCOMPARE(q8.isEmpty(), d.kind != DeviceKind::Cuda);
            if (!q8.isEmpty()) QVERIFY2(q8.contains(QStringLiteral("80")) && q8.contains(QStringLiteral("CPU")), qPrintable(q8));
        }
        QVERIFY(fallbackReasonFor(on(QStringLiteral("cpu"), QStringLiteral("q8_0")), list).isEmpty());
        QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("f16")), list).isEmpty());
        QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("q8_0")), list).isEmpty());
        QVERIFY(fallbackReasonFor(on(QStringLiteral("cuda:0"), QStringLiteral("q8_0")), list).isEmpty());
        ModelInfo narrow; // heads of 8 values (stories260K's)
        narrow.embeddingLength = 64;
        narrow.headCount = 8;
        const QString reason = fallbackReasonFor(on(QStringLiteral("cuda:0"), QStringLiteral("q8_0")), list, &narrow);
        QVERIFY2(reason.contains(QStringLiteral("Q8_0")) && reason.contains(QStringLiteral("CPU")), qPrintable(reason));
        QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("q8_0")), list, &narrow).isEmpty());
        // Zero GPU layers is the user's own choice of the CPU, not a fallback.
        LoadSettings none = on(QStringLiteral("cuda:0"), QStringLiteral("q8_0"));
        none.gpuLayers = 0;
        QVERIFY(fallbackReasonFor(none, list, &narrow).isEmpty());
    }

    void missingDevice() {
        DeviceList list = describedDevices();
        list.notes = {"CUDA: no NVIDIA driver"};
        const QString reason = fallbackReasonFor(on(QStringLiteral("cuda:3"), QStringLiteral("f16")), list);
        QVERIFY2(reason.contains(QStringLiteral("cuda:3 was not found")) && reason.contains(QStringLiteral("no NVIDIA driver")),
                 qPrintable(reason));
    }

    void modelChecks() {
        const DeviceList list = describedDevices();
        ModelInfo info;
        info.architecture = "llama";
        info.headCount = 8;
        info.embeddingLength = 1024;
        info.keyLength = 128;
        info.tensorsByType = {{"F32", 10}, {"Q4_K", 20}, {"IQ4_XS", 3}, {"MXFP4", 2}};
        // IQ4_XS and MXFP4: both GPUs have kernels.
        QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("f16")), list, &info).isEmpty());
        QVERIFY(fallbackReasonFor(on(QStringLiteral("cuda:0"), QStringLiteral("f16")), list, &info).isEmpty());
        // F64 (not a weight type either GPU reads): both name it, and only it.
        info.tensorsByType["F64"] = 3;
        for (const QString& gpu : {QStringLiteral("vulkan:0"), QStringLiteral("cuda:0")}) {
            const QString why = fallbackReasonFor(on(gpu, QStringLiteral("f16")), list, &info);
            QVERIFY2(why.contains(QStringLiteral("F64")) && !why.contains(QStringLiteral("Q4_K,")) &&
                         !why.contains(QStringLiteral("IQ4_XS")),
                     qPrintable(why));
        }
        info.tensorsByType.erase("F64");
        // The ternary and grid i-quants, Q8_1 and Q8_K: both GPUs have kernels.
        for (const char* type : {"TQ1_0", "TQ2_0", "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S",
                                 "Q8_1", "Q8_K"}) {
            info.tensorsByType[type] = 4;
            QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("f16")), list, &info).isEmpty());
            QVERIFY2(fallbackReasonFor(on(QStringLiteral("cuda:0"), QStringLiteral("f16")), list, &info).isEmpty(), type);
            info.tensorsByType.erase(type);
        }
        info.keyLength = 512;
        QVERIFY(fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("f16")), list, &info)
                    .contains(QStringLiteral("512")));
        QVERIFY(fallbackReasonFor(on(QStringLiteral("cpu"), QStringLiteral("f16")), list, &info).isEmpty());
    }

    // "As many layers as fit" on a device with room for none: the load goes to the CPU.
    void noLayerFits() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString model = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        DeviceList list = describedDevices();
        list.devices[1].freeMemory = list.devices[1].totalMemory = 4096;
        const QString reason = fallbackReasonFor(on(QStringLiteral("vulkan:0"), QStringLiteral("f16")), list, model);
        QVERIFY2(reason.contains(QStringLiteral("not even one layer fits")), qPrintable(reason));
        QVERIFY(fallbackReasonFor(on(QStringLiteral("cuda:0"), QStringLiteral("f16")), list, model).isEmpty());
        // A fixed layer count is tried as asked (the estimate turns red instead).
        LoadSettings fixed = on(QStringLiteral("vulkan:0"), QStringLiteral("f16"));
        fixed.gpuLayers = 2;
        QVERIFY(fallbackReasonFor(fixed, list, model).isEmpty());
    }

    // The prediction against the engine's own placement on a real Vulkan device.
    void agreesWithTheEngine() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString model = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        const DeviceList devices = listDevices();
        const DeviceDescription* vulkan = nullptr;
        for (const DeviceDescription& d : devices.devices)
            if (d.kind == DeviceKind::Vulkan && !vulkan) vulkan = &d;
        if (!vulkan) QSKIP("no Vulkan device on this machine: the engine's placement cannot be compared");
        qputenv("HEARTH_SKIP_DEVICE_CHECK", "1"); // placement only; the numbers are other tests' business
        for (const KvType kv : {KvType::F16, KvType::Q8_0, KvType::F32}) {
            const QString kvName = kv == KvType::F16 ? QStringLiteral("f16") : kv == KvType::Q8_0 ? QStringLiteral("q8_0")
                                                                                                 : QStringLiteral("f32");
            LoadSettings ls = on(QString::fromStdString(vulkan->id), kvName);
            ls.contextLength = 256;
            ls.maxParallel = 1;
            const QString predicted = fallbackReasonFor(ls, devices, model);
            EngineConfig config;
            config.modelPath = model.toStdString();
            config.device = vulkan->id;
            config.gpuLayers = -1;
            config.kvType = kv;
            config.contextLength = 256;
            config.maxNumSeqs = 1;
            auto engine = Engine::create(config);
            QVERIFY2(engine.isOk(), engine.status().toString().c_str());
            std::string notes;
            for (const std::string& n : (*engine)->model().deviceNotes) notes += n + "; ";
            qInfo("kv %s: predicted '%s', engine notes '%s'", qPrintable(kvName), qPrintable(predicted), notes.c_str());
            QCOMPARE(predicted.isEmpty(), notes.empty());
            QCOMPARE((*engine)->model().device, vulkan->id);
        }
        qunsetenv("HEARTH_SKIP_DEVICE_CHECK");
    }
};

QTEST_GUILESS_MAIN(TestLoadFallback)
#include "test_load_fallback.moc"
