// The shared memory plan behind the settings estimate and every fit badge: planMemory agrees with
// the engine's split estimate and resolves "as many layers as fit" like the load does; the verdict
// follows the device and RAM; the size-only plan (hub files) grows with context and KV type; and
// recommendedStarters picks starters that fit the machine described. A mixture of experts that does
// not fit keeps every layer on the GPU and as few layers' experts in RAM as make it fit.
#include "services/memory_estimate.h"
#include "test_support.h"

#include "hearth/gguf.h"
#include "hearth/projector.h"
#include "hearth/synth.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;
using namespace hearth::app;

namespace {

DeviceList machine(uint64_t gpuFreeBytes) {
    DeviceList list;
    DeviceDescription cpu;
    cpu.id = "cpu";
    cpu.totalMemory = uint64_t(16) << 30;
    list.devices = {cpu};
    if (gpuFreeBytes > 0) {
        DeviceDescription gpu;
        gpu.kind = DeviceKind::Vulkan;
        gpu.id = "vulkan:0";
        gpu.type = "discrete";
        gpu.freeMemory = gpuFreeBytes;
        gpu.totalMemory = gpuFreeBytes;
        list.devices.push_back(gpu);
    }
    return list;
}

LoadSettings settingsOn(const QString& device, int gpuLayers = -1) {
    LoadSettings ls;
    ls.device = device;
    ls.gpuLayers = gpuLayers;
    return ls;
}

constexpr qint64 kGiB = qint64(1) << 30;

} // namespace

class TestMemoryEstimate : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void planFollowsTheEngineEstimate() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString model = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        gguf::ReadOptions options;
        options.requireTensorData = false;
        auto file = gguf::File::open(model.toStdString(), options);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const uint32_t ctx = std::min<uint32_t>(info->contextLength, 4096);
        const int layers = int(info->blockCount);

        // CPU: everything in RAM, the engine's numbers.
        MemoryPlan cpu = planMemory(model, settingsOn(QStringLiteral("cpu")), machine(0), 8 * kGiB);
        QVERIFY2(cpu.error.isEmpty(), qPrintable(cpu.error));
        QCOMPARE(cpu.split.cpuTotal(), estimateSplit(*file, *info, 0, ctx, quant::Type::F16, 4).cpuTotal());
        QCOMPARE(cpu.fit, Fit::InRam);
        QCOMPARE(fitBadge(cpu), QStringLiteral("fits in RAM"));

        // A GPU with room for all of it.
        MemoryPlan big = planMemory(model, settingsOn(QStringLiteral("vulkan:0")), machine(uint64_t(4) << 30), 8 * kGiB);
        QCOMPARE(big.gpuLayers, layers);
        QCOMPARE(big.fit, Fit::OnGpu);
        QCOMPARE(fitBadge(big), QStringLiteral("fits on GPU"));

        // A GPU whose usable memory (free less a tenth) lies between 3 and 4 layers: split.
        const uint64_t three = estimateSplit(*file, *info, 3, ctx, quant::Type::F16, 4).gpuTotal();
        const uint64_t four = estimateSplit(*file, *info, 4, ctx, quant::Type::F16, 4).gpuTotal();
        MemoryPlan split = planMemory(model, settingsOn(QStringLiteral("vulkan:0")), machine((three + four) / 2 * 10 / 9 + 1),
                                      8 * kGiB);
        QCOMPARE(split.gpuLayers, 3);
        QCOMPARE(split.fit, Fit::GpuAndRam);
        QCOMPARE(fitBadge(split), QStringLiteral("fits (GPU+RAM)"));
        // Forcing every layer onto that GPU is too much for it.
        MemoryPlan forced = planMemory(model, settingsOn(QStringLiteral("vulkan:0"), layers),
                                       machine((three + four) / 2 * 10 / 9 + 1), 8 * kGiB);
        QVERIFY(forced.gpuOver);
        QCOMPARE(forced.fit, Fit::WontFit);

        // RAM: tight above three quarters, too much above nine tenths of what is available.
        const uint64_t need = cpu.ramNeed();
        QCOMPARE(planMemory(model, settingsOn(QStringLiteral("cpu")), machine(0), qint64(double(need) / 0.8)).fit, Fit::Tight);
        QCOMPARE(planMemory(model, settingsOn(QStringLiteral("cpu")), machine(0), qint64(need)).fit, Fit::WontFit);
        QCOMPARE(fitBadge(planMemory(model, settingsOn(QStringLiteral("cpu")), machine(0), qint64(need))),
                 QStringLiteral("won't fit"));

        // A device not in the list: the CPU, as the load would do.
        QVERIFY(!planMemory(model, settingsOn(QStringLiteral("cuda:7")), machine(0), 8 * kGiB).gpu);
        // An unreadable file says so.
        QVERIFY(!planMemory(QStringLiteral("/nonexistent.gguf"), settingsOn(QStringLiteral("cpu")), machine(0), kGiB).error.isEmpty());
        QCOMPARE(fitBadge(cpu, QStringLiteral("architecture 'mamba' not supported")),
                 QStringLiteral("won't run here: architecture 'mamba' not supported"));
    }

    // A vision projector loaded with the model is counted where it runs (RAM, or the GPU it shares
    // with the layers, which then fit fewer), and a projector that does not read counts nothing.
    void theProjectorIsCounted() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString model = QString::fromStdString(test::testDataPath("models/stories260K.gguf"));
        QTemporaryDir dir;
        ProjectorSynthOptions o;
        o.imageSize = 224;
        o.patchSize = 14;
        o.nEmbd = 64;
        o.nFf = 128;
        o.nLayer = 2;
        o.nHead = 4;
        o.projectionDim = 64;
        o.outPath = dir.filePath(QStringLiteral("mmproj-f16.gguf")).toStdString();
        QVERIFY2(synthesizeProjector(o).isOk(), synthesizeProjector(o).toString().c_str());
        const uint64_t bytes = projectorMemoryBytes(*readProjector(o.outPath));
        QVERIFY(bytes > 0);
        LoadSettings cpu = settingsOn(QStringLiteral("cpu"));
        const MemoryPlan plain = planMemory(model, cpu, machine(0), 8 * kGiB);
        cpu.projectorPath = QString::fromStdString(o.outPath);
        const MemoryPlan withVision = planMemory(model, cpu, machine(0), 8 * kGiB);
        QCOMPARE(withVision.projectorBytes, bytes);
        QCOMPARE(withVision.split.cpuTotal(), plain.split.cpuTotal() + bytes);
        cpu.projectorPath = dir.filePath(QStringLiteral("missing.gguf"));
        QCOMPARE(planMemory(model, cpu, machine(0), 8 * kGiB).split.cpuTotal(), plain.split.cpuTotal());

        // A GPU with room for every layer, but not for them and the projector.
        LoadSettings gpu = settingsOn(QStringLiteral("vulkan:0"));
        const MemoryPlan all = planMemory(model, gpu, machine(uint64_t(4) << 30), 8 * kGiB);
        const uint64_t usable = all.split.gpuTotal() + 1024;
        const DeviceList tight = machine(usable * 10 / 9 + 1);
        QCOMPARE(planMemory(model, gpu, tight, 8 * kGiB).gpuLayers, all.gpuLayers);
        gpu.projectorPath = QString::fromStdString(o.outPath);
        const MemoryPlan shared = planMemory(model, gpu, tight, 8 * kGiB);
        QVERIFY(shared.gpuLayers < all.gpuLayers);
        QVERIFY(shared.split.computeGpu >= bytes);
        QVERIFY(!shared.gpuOver);
    }

    // qwen3moe-tiny (4 layers) on a GPU with room for all but the experts of about one and a half
    // layers: every layer there, the experts of the first two in RAM, "fits (GPU+RAM)"; the same
    // count asked for by hand; none asked for: fewer layers. The estimate the plan shows is the
    // engine's for that split.
    void expertsStayInRamWhenTheModelDoesNotFit() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        SynthOptions o;
        o.preset = "qwen3moe-tiny";
        o.typeOrMix = "Q8_0";
        o.vocabPath = test::testDataPath("models/stories260K.gguf");
        o.outPath = dir.filePath(QStringLiteral("moe.gguf")).toStdString();
        const Status made = synthesizeModel(o);
        QVERIFY2(made.isOk(), made.toString().c_str());
        const QString model = QString::fromStdString(o.outPath);
        auto file = gguf::File::open(o.outPath);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const uint32_t ctx = std::min<uint32_t>(info->contextLength, 4096);
        auto gpuBytes = [&](int moe) { return estimateSplit(*file, *info, 4, ctx, quant::Type::F16, 4, 512, moe).gpuTotal(); };
        const uint64_t usable = (gpuBytes(1) + gpuBytes(2)) / 2;
        const DeviceList gpu = machine(usable * 10 / 9 + 1);

        MemoryPlan p = planMemory(model, settingsOn(QStringLiteral("vulkan:0")), gpu, 8 * kGiB);
        QVERIFY2(p.error.isEmpty(), qPrintable(p.error));
        QCOMPARE(p.gpuLayers, 4);
        QCOMPARE(p.cpuMoeLayers, 2);
        QCOMPARE(p.split.gpuTotal(), gpuBytes(2));
        QVERIFY(p.split.expertsCpu > 0);
        QVERIFY(!p.gpuOver);
        QCOMPARE(p.fit, Fit::GpuAndRam);

        LoadSettings byHand = settingsOn(QStringLiteral("vulkan:0"), 4);
        byHand.cpuMoeLayers = 3;
        p = planMemory(model, byHand, gpu, 8 * kGiB);
        QCOMPARE(p.cpuMoeLayers, 3);
        QCOMPARE(p.split.gpuTotal(), gpuBytes(3));

        LoadSettings none = settingsOn(QStringLiteral("vulkan:0"));
        none.cpuMoeLayers = 0;
        p = planMemory(model, none, gpu, 8 * kGiB);
        QCOMPARE(p.cpuMoeLayers, 0);
        QVERIFY(p.gpuLayers < 4);
        QCOMPARE(p.fit, Fit::GpuAndRam);
    }

    void sizeOnlyPlan() {
        const qint64 file = 4 * kGiB;
        LoadSettings ls = settingsOn(QStringLiteral("cpu"));
        ls.contextLength = 4096;
        const MemoryPlan f16 = planMemoryFromSize(file, 7'000'000'000ull, 32768, ls, machine(0), 64 * kGiB);
        QVERIFY(f16.approximate);
        QCOMPARE(f16.contextLength, 4096u);
        QVERIFY(f16.split.weightsCpu == uint64_t(file));
        ls.kvType = QStringLiteral("q8_0");
        const MemoryPlan q8 = planMemoryFromSize(file, 7'000'000'000ull, 32768, ls, machine(0), 64 * kGiB);
        ls.kvType = QStringLiteral("f32");
        const MemoryPlan f32 = planMemoryFromSize(file, 7'000'000'000ull, 32768, ls, machine(0), 64 * kGiB);
        QVERIFY(q8.split.kvCpu < f16.split.kvCpu && f16.split.kvCpu < f32.split.kvCpu);
        ls.kvType = QStringLiteral("f16");
        ls.contextLength = 16384;
        QVERIFY(planMemoryFromSize(file, 7'000'000'000ull, 32768, ls, machine(0), 64 * kGiB).split.kvCpu > f16.split.kvCpu);
        QCOMPARE(f16.fit, Fit::InRam);
        QCOMPARE(planMemoryFromSize(file, 0, 0, ls, machine(0), 4 * kGiB).fit, Fit::WontFit);
        // On a GPU: all of it, part of it, by the device's memory.
        ls = settingsOn(QStringLiteral("vulkan:0"));
        QCOMPARE(planMemoryFromSize(file, 0, 0, ls, machine(uint64_t(24) << 30), 64 * kGiB).fit, Fit::OnGpu);
        const MemoryPlan part = planMemoryFromSize(file, 0, 0, ls, machine(uint64_t(2) << 30), 64 * kGiB);
        QCOMPARE(part.fit, Fit::GpuAndRam);
        QVERIFY(part.gpuLayers > 0 && part.gpuLayers < part.blockCount);
        QVERIFY(part.split.gpuTotal() <= part.gpuBudget);
    }

    void parameterCounts() {
        QCOMPARE(parseParameterCount(QStringLiteral("0.5B")), 500'000'000ull);
        QCOMPARE(parseParameterCount(QStringLiteral("1.5B")), 1'500'000'000ull);
        QCOMPARE(parseParameterCount(QStringLiteral("260K")), 260'000ull);
        QCOMPARE(parseParameterCount(QStringLiteral("7m")), 7'000'000ull);
        QCOMPARE(parseParameterCount(QStringLiteral("large")), 0ull);
        QCOMPARE(parseParameterCount(QString()), 0ull);
    }

    void recommendations() {
        QString error;
        const QList<StarterModel> starters =
            ModelLibrary::starterModels(QStringLiteral(":/hearth/models/starter.json"), &error);
        QVERIFY2(!starters.isEmpty(), qPrintable(error));
        qint64 smallest = starters.front().approxSizeBytes, largest = 0;
        for (const StarterModel& s : starters) {
            smallest = std::min(smallest, s.approxSizeBytes);
            largest = std::max(largest, s.approxSizeBytes);
        }
        auto sizes = [](const QList<StarterModel>& list) {
            QStringList out;
            for (const StarterModel& s : list) out << QStringLiteral("%1 %2").arg(s.title).arg(s.approxSizeBytes);
            return out.join(QStringLiteral(", "));
        };

        // Plenty of RAM, no GPU: three, each fitting, the smallest among them as the quick one.
        const QList<StarterModel> roomy = recommendedStarters(starters, machine(0), 64 * kGiB, 3);
        QCOMPARE(roomy.size(), 3);
        bool hasSmallest = false;
        for (const StarterModel& s : roomy) {
            hasSmallest = hasSmallest || s.approxSizeBytes == smallest;
            QVERIFY(planMemoryFromSize(s.approxSizeBytes, parseParameterCount(s.parameters), 0,
                                       defaultLoadSettingsFor(machine(0)), machine(0), 64 * kGiB).fit == Fit::InRam);
        }
        QVERIFY2(hasSmallest, qPrintable(sizes(roomy)));
        QVERIFY2(roomy.front().approxSizeBytes >= roomy.back().approxSizeBytes, qPrintable(sizes(roomy)));

        // Little RAM: only what fits it, never one that would be tight.
        const qint64 little = 3 * kGiB;
        const QList<StarterModel> small = recommendedStarters(starters, machine(0), little, 3);
        QVERIFY(!small.isEmpty());
        for (const StarterModel& s : small)
            QVERIFY2(double(s.approxSizeBytes) < kTightRamFraction * double(little), qPrintable(sizes(small)));
        // Nothing fits: none.
        QVERIFY(recommendedStarters(starters, machine(0), 64 << 20, 3).isEmpty());

        // A big GPU: the first pick runs wholly on it, and the GPU is what the settings choose.
        const DeviceList gpu = machine(uint64_t(24) << 30);
        QCOMPARE(defaultLoadSettingsFor(gpu).device, QStringLiteral("vulkan:0"));
        const QList<StarterModel> withGpu = recommendedStarters(starters, gpu, 16 * kGiB, 2);
        QCOMPARE(withGpu.size(), 2);
        QCOMPARE(planMemoryFromSize(withGpu.front().approxSizeBytes, parseParameterCount(withGpu.front().parameters), 0,
                                    defaultLoadSettingsFor(gpu), gpu, 16 * kGiB).fit,
                 Fit::OnGpu);
        qInfo("64 GiB RAM: %s", qPrintable(sizes(roomy)));
        qInfo("3 GiB RAM: %s", qPrintable(sizes(small)));
        qInfo("24 GiB GPU: %s", qPrintable(sizes(withGpu)));
    }
};

QTEST_GUILESS_MAIN(TestMemoryEstimate)
#include "test_memory_estimate.moc"
