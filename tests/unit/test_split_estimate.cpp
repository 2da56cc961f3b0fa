// The GPU/CPU memory estimate (hearth/model_info.h) against what the engine actually allocates:
// the ModelRunner loaded on the CPU (and on vulkan:0 with a layer split, where there is one)
// reports the weights it holds, its K/V pools and, after one step of the estimated shape, its
// step buffers; the estimate must name the same bytes. Plus the device list's CPU entry. A
// hybrid model (qwen35-tiny, synthesized) adds its recurrent state: the slots the engine takes (live, snapshots, forks).
// A mixture of experts (qwen3moe-tiny) with the experts of some layers in RAM (--n-cpu-moe), and
// the fit that chooses how many (fitOnGpu).
#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/synth.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "runtime/memory_budget.h"
#include "test_support.h"

#include <QtTest>

using namespace hearth;

namespace {

constexpr uint32_t kContext = 64;
constexpr int kSequences = 3, kBatchTokens = 5;

struct Actual {
    runtime::DeviceMemory gpu, cpu;
    std::vector<std::string> fallbacks; // nodes the GPU left to the CPU ("op@layer")
    int stateSlots = 0;
    std::string error;
};

// Loads `path` on `device` as the estimate assumes (blocks of 16, kContext per sequence) and runs
// one step of kBatchTokens tokens from kSequences sequences, each wanting its last logits.
Actual allocate(const std::string& path, const std::string& device, int gpuLayers, KvType kv, int cpuMoeLayers) {
    Actual a;
    auto file = gguf::File::open(path);
    if (!file) return a.error = file.status().toString(), a;
    auto arch = model::loadArchitecture(*file);
    if (!arch) return a.error = arch.status().toString(), a;
    runtime::RunnerConfig rc;
    rc.device = device;
    rc.gpuLayers = gpuLayers;
    rc.cpuMoeLayers = cpuMoeLayers;
    rc.kvType = kv;
    rc.blockSize = 16;
    rc.numBlocks = int(kContext / 16) * kSequences;
    // Recurrent models: as many state slots as the engine (and the estimate) takes for this KV.
    rc.stateSlots = runtime::stateSlotsFor((*arch)->dims().stateBytesPerSlot(), kSequences,
                                           uint64_t(rc.numBlocks) * 16 * runtime::kvBytesPerToken((*arch)->dims(), kv), 0, true,
                                           runtime::availableMemoryBytes());
    auto runner = runtime::ModelRunner::create(**arch, rc);
    if (!runner) return a.error = runner.status().toString(), a;
    const std::vector<int32_t> t0{0}, t1{1}, t2{2};
    graph::Batch b;
    b.blockTables = {t0, t1, t2};
    b.tokens = {{1, 0, 0, false}, {5, 1, 0, true}, {1, 0, 1, false}, {7, 1, 1, true}, {1, 0, 2, true}};
    if ((*runner)->stateSlots() > 0) // each sequence starts empty and leaves its state in its slot
        for (int32_t s = 0; s < kSequences; ++s) b.states.push_back({-1, s, {}});
    std::vector<float> logits;
    const Status s = (*runner)->forward(b, logits);
    if (!s.isOk()) return a.error = s.toString(), a;
    a.fallbacks = (*runner)->fallbacks();
    a.stateSlots = (*runner)->stateSlots();
    const auto memory = (*runner)->memory();
    a.cpu = memory.back();
    if (memory.size() > 1) a.gpu = memory.front();
    return a;
}

} // namespace

class TestSplitEstimate : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    // models/NAME from the test data, or "synth:PRESET": that preset in F32 with stories260K's
    // vocabulary, written once into m_dir. Empty (and the reason in `why`) when it cannot be had.
    std::string modelPath(const QString& model, QString& why) {
        const QString file = model.startsWith(QStringLiteral("synth:")) ? QStringLiteral("models/stories260K.gguf")
                                                                          : QStringLiteral("models/") + model;
        const QString found = QDir(test::testDataDir()).filePath(file);
        if (!QFileInfo::exists(found))
            return why = QStringLiteral("test data not found: %1 (set HEARTH_TEST_DATA)").arg(found), std::string();
        if (!model.startsWith(QStringLiteral("synth:"))) return found.toStdString();
        const QString preset = model.mid(6);
        const std::string out = m_dir.filePath(preset + QStringLiteral(".gguf")).toStdString();
        if (!QFileInfo::exists(QString::fromStdString(out))) {
            SynthOptions o;
            o.preset = preset.toStdString();
            o.typeOrMix = "F32";
            o.vocabPath = found.toStdString();
            o.outPath = out;
            const Status s = synthesizeModel(o);
            if (!s.isOk()) return why = QString::fromStdString(s.toString()), std::string();
        }
        return out;
    }

private Q_SLOTS:
    void estimateMatchesAllocation_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("device");
        QTest::addColumn<int>("gpuLayers");
        QTest::addColumn<int>("kv");
        QTest::addColumn<int>("cpuMoe");
        QTest::newRow("stories260K cpu f32") << QStringLiteral("stories260K.gguf") << QStringLiteral("cpu") << 0 << int(KvType::F32) << 0;
        QTest::newRow("tiny-random cpu f16") << QStringLiteral("llama-2-tiny-random.gguf") << QStringLiteral("cpu") << 0 << int(KvType::F16) << 0;
        QTest::newRow("stories260K vulkan 2 of 5") << QStringLiteral("stories260K.gguf") << QStringLiteral("vulkan:0") << 2 << int(KvType::F16) << 0;
        QTest::newRow("stories260K vulkan all") << QStringLiteral("stories260K.gguf") << QStringLiteral("vulkan:0") << -1 << int(KvType::F32) << 0;
        // Three delta-net layers with a state per sequence, K/V for the attention layer only.
        QTest::newRow("qwen35-tiny cpu f32") << QStringLiteral("synth:qwen35-tiny") << QStringLiteral("cpu") << 0 << int(KvType::F32) << 0;
        QTest::newRow("qwen35-tiny cpu f16") << QStringLiteral("synth:qwen35-tiny") << QStringLiteral("cpu") << 0 << int(KvType::F16) << 0;
        QTest::newRow("qwen35-tiny vulkan 2 of 4") << QStringLiteral("synth:qwen35-tiny") << QStringLiteral("vulkan:0") << 2 << int(KvType::F16) << 0;
        QTest::newRow("qwen35-tiny vulkan all") << QStringLiteral("synth:qwen35-tiny") << QStringLiteral("vulkan:0") << -1 << int(KvType::F32) << 0;
        // Experts of the first layer, then of every layer, in RAM; attention and the router on Vulkan.
        QTest::newRow("qwen3moe-tiny vulkan all, experts of 1 in RAM") << QStringLiteral("synth:qwen3moe-tiny") << QStringLiteral("vulkan:0") << -1 << int(KvType::F16) << 1;
        QTest::newRow("qwen3moe-tiny vulkan all, every expert in RAM") << QStringLiteral("synth:qwen3moe-tiny") << QStringLiteral("vulkan:0") << -1 << int(KvType::F16) << -1;
        QTest::newRow("qwen3moe-tiny vulkan 1 of 4, its experts in RAM") << QStringLiteral("synth:qwen3moe-tiny") << QStringLiteral("vulkan:0") << 1 << int(KvType::F16) << -1;
    }
    void estimateMatchesAllocation() {
        QFETCH(QString, model);
        QFETCH(QString, device);
        QFETCH(int, gpuLayers);
        QFETCH(int, kv);
        QFETCH(int, cpuMoe);
        QString why;
        const std::string path = modelPath(model, why);
        if (path.empty()) QSKIP(qPrintable(why));
        if (device != QStringLiteral("cpu") && !findDevice(listDevices(), device.toStdString()))
            QSKIP(qPrintable(device + QStringLiteral(" is not available here")));
        const Actual a = allocate(path, device.toStdString(), gpuLayers, KvType(kv), cpuMoe);
        QVERIFY2(a.error.empty(), a.error.c_str());
        // The estimate assumes the GPU runs every node: a device that leaves some to the CPU (the
        // delta net's ops on a GPU without them) places memory elsewhere than it says.
        if (!a.fallbacks.empty()) {
            std::string list;
            for (const std::string& f : a.fallbacks) list += (list.empty() ? "" : ", ") + f;
            QSKIP(qPrintable(device + QStringLiteral(" leaves nodes to the CPU (") + QString::fromStdString(list) +
                             QStringLiteral("): the estimate assumes it runs them")));
        }
        auto file = gguf::File::open(path);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const quant::Type kvType = KvType(kv) == KvType::F32 ? quant::Type::F32 : quant::Type::F16;
        const int layers = device == QStringLiteral("cpu") ? 0 : gpuLayers < 0 ? int(info->blockCount) : gpuLayers;
        const SplitEstimate e = estimateSplit(*file, *info, layers, kContext, kvType, kSequences, kBatchTokens, cpuMoe);
        if (cpuMoe != 0) {
            QCOMPARE(e.cpuMoeLayers, cpuMoe < 0 ? layers : cpuMoe);
            // The CPU holds those layers' experts: exactly their ffn_*_exps tensors.
            uint64_t experts = 0;
            for (const gguf::TensorInfo& t : file->tensors())
                for (int l = 0; l < e.cpuMoeLayers; ++l)
                    if (t.name.rfind("blk." + std::to_string(l) + ".", 0) == 0 && t.name.find("_exps.") != std::string::npos)
                        experts += t.bytes;
            QVERIFY(experts > 0);
            QCOMPARE(e.expertsCpu, experts);
        }
        qInfo("estimate gpu %llu/%llu/%llu cpu %llu/%llu/%llu (weights/kv/compute); allocated gpu %llu/%llu/%llu "
              "cpu %llu/%llu/%llu",
              (unsigned long long)e.weightsGpu, (unsigned long long)e.kvGpu, (unsigned long long)e.computeGpu,
              (unsigned long long)e.weightsCpu, (unsigned long long)e.kvCpu, (unsigned long long)e.computeCpu,
              (unsigned long long)a.gpu.weightBytes, (unsigned long long)a.gpu.kvBytes,
              (unsigned long long)a.gpu.activationBytes, (unsigned long long)a.cpu.mappedBytes,
              (unsigned long long)a.cpu.kvBytes, (unsigned long long)a.cpu.activationBytes);
        qInfo("recurrent state: estimate gpu %llu cpu %llu; allocated gpu %llu cpu %llu", (unsigned long long)e.stateGpu,
              (unsigned long long)e.stateCpu, (unsigned long long)a.gpu.stateBytes, (unsigned long long)a.cpu.stateBytes);
        QCOMPARE(e.weightsGpu, a.gpu.weightBytes);
        QCOMPARE(e.kvGpu, a.gpu.kvBytes);
        QCOMPARE(e.computeGpu, a.gpu.activationBytes);
        QCOMPARE(e.weightsCpu, a.cpu.mappedBytes);
        QCOMPARE(e.kvCpu, a.cpu.kvBytes);
        QCOMPARE(e.computeCpu, a.cpu.activationBytes);
        QCOMPARE(e.stateGpu, a.gpu.stateBytes);
        QCOMPARE(e.stateCpu, a.cpu.stateBytes);
        // K/V only for the attention layers, the state for the others (none in a plain decoder).
        const uint64_t stateAll = info->stateBytesPerSequence() * uint64_t(a.stateSlots);
        QCOMPARE(e.stateGpu + e.stateCpu, stateAll);
        if (model.startsWith(QStringLiteral("synth:qwen35"))) {
            QCOMPARE(info->attentionLayers(), 1u);
            QCOMPARE(info->recurrentLayers, 3u);
            QVERIFY(stateAll > 0);
        }
        // Every weight is somewhere; a weight two devices read (a tied embedding) counts twice. The
        // multi-token-prediction layers (qwen35-tiny's last block) are not run: no device reads them.
        uint64_t unread = 0;
        const uint32_t firstMtp = info->blockCount - info->nextnLayers;
        for (const gguf::TensorInfo& t : file->tensors())
            for (uint32_t l = firstMtp; l < info->blockCount; ++l)
                if (t.name.rfind("blk." + std::to_string(l) + ".", 0) == 0) unread += t.bytes;
        QVERIFY(e.weightsGpu + e.weightsCpu >= info->weightBytes - unread);
    }

    // More layers on the GPU never need less GPU memory, and the fit search agrees with it.
    void moreLayersNeedMore() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        uint64_t last = 0;
        for (int n = 0; n <= int(info->blockCount); ++n) {
            const SplitEstimate e = estimateSplit(*file, *info, n, 256, quant::Type::F16, 2);
            QCOMPARE(e.gpuLayers, n);
            QVERIFY(e.gpuTotal() >= last);
            last = e.gpuTotal();
            if (n > 0) QCOMPARE(maxGpuLayersThatFit(*file, *info, e.gpuTotal(), 256, quant::Type::F16, 2), n);
        }
        QCOMPARE(estimateSplit(*file, *info, -3, 256, quant::Type::F16, 2).gpuLayers, 0);
        QCOMPARE(estimateSplit(*file, *info, 99, 256, quant::Type::F16, 2).gpuLayers, int(info->blockCount));
        QCOMPARE(estimateSplit(*file, *info, 0, 256, quant::Type::F16, 2).gpuTotal(), uint64_t(0));
    }

    // Experts moved to RAM take their bytes off the GPU, layer by layer; the fit keeps every layer
    // on the GPU with as few layers' experts in RAM as the budget needs, then gives up layers
    // (with their experts in RAM), and a fixed count of experts in RAM is kept as given. A dense
    // model has none to move.
    void expertsInRamFit() {
        QString why;
        const std::string path = modelPath(QStringLiteral("synth:qwen3moe-tiny"), why);
        if (path.empty()) QSKIP(qPrintable(why));
        auto file = gguf::File::open(path);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const int L = int(info->blockCount);
        QCOMPARE(L, 4);
        auto est = [&](int n, int moe) { return estimateSplit(*file, *info, n, 256, quant::Type::F16, 2, 512, moe); };
        auto fit = [&](uint64_t bytes, int moe = kFitExperts) {
            return fitOnGpu(*file, *info, bytes, 256, quant::Type::F16, 2, 512, moe);
        };
        const SplitEstimate all = est(L, 0);
        QCOMPARE(all.cpuMoeLayers, 0);
        QCOMPARE(all.expertsCpu, uint64_t(0));
        uint64_t last = all.gpuTotal();
        for (int m = 1; m <= L; ++m) {
            const SplitEstimate e = est(L, m);
            QCOMPARE(e.cpuMoeLayers, m);
            QVERIFY(e.gpuTotal() < last);
            QCOMPARE(e.weightsGpu + e.expertsCpu, all.weightsGpu); // each expert weight moved, nothing else
            last = e.gpuTotal();
        }
        QCOMPARE(est(L, -1).cpuMoeLayers, L);
        QCOMPARE(est(2, 3).cpuMoeLayers, 2); // no more than the GPU's layers
        QCOMPARE(fit(all.gpuTotal()), (GpuFit{L, 0}));
        for (int m = 1; m <= L; ++m) {
            QCOMPARE(fit(est(L, m).gpuTotal()), (GpuFit{L, m}));
            QCOMPARE(fit(est(L, m).gpuTotal() + 1), (GpuFit{L, m}));
        }
        const uint64_t oneLayer = est(1, -1).gpuTotal();
        QVERIFY(oneLayer < est(L, L).gpuTotal());
        QCOMPARE(fit(oneLayer), (GpuFit{1, 1}));
        QCOMPARE(fit(oneLayer - 1), (GpuFit{0, 0}));
        // Experts fixed: only the layer count is fitted.
        const GpuFit none = fit(all.gpuTotal() - 1, 0);
        QCOMPARE(none.cpuMoeLayers, 0);
        QVERIFY(none.gpuLayers < L);
        QCOMPARE(fit(est(L, -1).gpuTotal(), -1), (GpuFit{L, L}));

        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto dense = gguf::File::open(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(dense.isOk());
        auto denseInfo = readModelInfo(*dense);
        QVERIFY(denseInfo.isOk());
        const SplitEstimate d = estimateSplit(*dense, *denseInfo, 5, 256, quant::Type::F16, 2, 512, -1);
        QCOMPARE(d.cpuMoeLayers, 0);
        QCOMPARE(d.gpuTotal(), estimateSplit(*dense, *denseInfo, 5, 256, quant::Type::F16, 2).gpuTotal());
        QCOMPARE(fitOnGpu(*dense, *denseInfo, d.gpuTotal() - 1, 256, quant::Type::F16, 2).cpuMoeLayers, 0);
    }

    void deviceListStartsWithTheCpu() {
        const DeviceList list = listDevices();
        QVERIFY(!list.devices.empty());
        const DeviceDescription& cpu = list.devices.front();
        QCOMPARE(cpu.id, std::string("cpu"));
        QCOMPARE(std::string(deviceKindName(cpu.kind)), std::string("cpu"));
        QVERIFY(!cpu.name.empty());
        QVERIFY(cpu.totalMemory > (uint64_t(64) << 20));
        QVERIFY(cpu.freeMemory > 0 && cpu.freeMemory <= cpu.totalMemory);
        QVERIFY(findDevice(list, "cpu") == &list.devices.front());
        QVERIFY(findDevice(list, "nope:7") == nullptr);
        for (const DeviceDescription& d : list.devices) qInfo("%s: %s", d.id.c_str(), d.name.c_str());
        for (const std::string& n : list.notes) qInfo("note: %s", n.c_str());
        // Every GPU backend either lists devices or says why not.
        bool vulkan = false, cuda = false;
        for (const DeviceDescription& d : list.devices) {
            vulkan = vulkan || d.kind == DeviceKind::Vulkan;
            cuda = cuda || d.kind == DeviceKind::Cuda;
        }
        for (const std::string& n : list.notes) {
            vulkan = vulkan || n.rfind("Vulkan", 0) == 0;
            cuda = cuda || n.rfind("CUDA", 0) == 0;
        }
        QVERIFY(vulkan && cuda);
    }
};

QTEST_GUILESS_MAIN(TestSplitEstimate)
#include "test_split_estimate.moc"
