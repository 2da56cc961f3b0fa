// The GPU/CPU split accounting (hearth/model_info.h) on a hand-made GGUF whose every byte is
// known, checked against figures worked out by hand; and the device list's CPU entry.
#include "gguf_builder.h"

#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

using namespace hearth;

class TestSplitEstimate : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::string m_path;
    ModelInfo m_info;

private Q_SLOTS:
    void initTestCase() {
        // F32 tensors (type 0): embedding [10][8] 320 B, output norm 32 B, output [10][8] 320 B,
        // per layer attn_q [8][8] 256 B and ffn_up [16][8] 512 B: 768 B a layer.
        struct T { const char* name; std::vector<uint64_t> ne; uint64_t bytes; };
        const std::vector<T> tensors = {{"token_embd.weight", {8, 10}, 320}, {"output_norm.weight", {8}, 32},
                                        {"output.weight", {8, 10}, 320},     {"blk.0.attn_q.weight", {8, 8}, 256},
                                        {"blk.0.ffn_up.weight", {8, 16}, 512}, {"blk.1.attn_q.weight", {8, 8}, 256},
                                        {"blk.1.ffn_up.weight", {8, 16}, 512}};
        test::GgufBytes b;
        b.header(tensors.size(), 1).kvStr("general.architecture", "llama");
        uint64_t offset = 0;
        for (const T& t : tensors) {
            b.tensor(t.name, t.ne, 0, offset);
            offset += t.bytes;
        }
        b.padTo(32).zeros(offset);
        m_path = m_dir.filePath(QStringLiteral("split.gguf")).toStdString();
        std::ofstream(m_path, std::ios::binary).write(reinterpret_cast<const char*>(b.bytes.data()),
                                                      std::streamsize(b.bytes.size()));
        m_info.blockCount = 2;
        m_info.embeddingLength = 8;
        m_info.feedForwardLength = 16;
        m_info.headCount = 2;
        m_info.headCountKv = 1;
        m_info.keyLength = 4;
        m_info.valueLength = 4;
        m_info.vocabSize = 10;
    }

    void splitsByLayer() {
        auto file = gguf::File::open(m_path);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        // KV, F32, context 64, 3 sequences: 1 head x (4 + 4) x 2 layers x 64 x 4 B x 3 = 12288 B,
        // 6144 B a layer. Compute: 4 tokens x ((3 x 8 + 2 x 8 + 8 + 2 x 16 + 6) x 4 B + 44 B) =
        // 1552 B of activations (E 8, q 2 x 4, k + v 1 x 8, F 16, 6 index words, one int8 chunk);
        // logits 3 x 10 x 4 = 120 B.
        const SplitEstimate none = estimateSplit(*file, m_info, 0, 64, quant::Type::F32, 3, 4);
        QCOMPARE(none.weightsGpu, uint64_t(0));
        QCOMPARE(none.weightsCpu, uint64_t(2208));
        QCOMPARE(none.kvGpu, uint64_t(0));
        QCOMPARE(none.kvCpu, uint64_t(12288));
        QCOMPARE(none.computeGpu, uint64_t(0));
        QCOMPARE(none.computeCpu, uint64_t(1672));

        const SplitEstimate one = estimateSplit(*file, m_info, 1, 64, quant::Type::F32, 3, 4);
        QCOMPARE(one.gpuLayers, 1);
        QCOMPARE(one.weightsGpu, uint64_t(768));
        QCOMPARE(one.weightsCpu, uint64_t(1440));
        QCOMPARE(one.kvGpu, uint64_t(6144));
        QCOMPARE(one.kvCpu, uint64_t(6144));
        QCOMPARE(one.computeGpu, uint64_t(1552));
        QCOMPARE(one.computeCpu, uint64_t(1672));
        QCOMPARE(one.gpuTotal(), uint64_t(8464));

        // All layers: the output norm and matrix move too; the embedding stays in RAM.
        const SplitEstimate all = estimateSplit(*file, m_info, 99, 64, quant::Type::F32, 3, 4);
        QCOMPARE(all.gpuLayers, 2);
        QCOMPARE(all.weightsGpu, uint64_t(1888));
        QCOMPARE(all.weightsCpu, uint64_t(320));
        QCOMPARE(all.kvGpu, uint64_t(12288));
        QCOMPARE(all.kvCpu, uint64_t(0));
        QCOMPARE(all.computeGpu, uint64_t(1672));
        QCOMPARE(all.computeCpu, uint64_t(128));
        QCOMPARE(estimateSplit(*file, m_info, -3, 64, quant::Type::F32, 3, 4).gpuLayers, 0);

        QCOMPARE(maxGpuLayersThatFit(*file, m_info, 8463, 64, quant::Type::F32, 3, 4), 0);
        QCOMPARE(maxGpuLayersThatFit(*file, m_info, 8464, 64, quant::Type::F32, 3, 4), 1);
        QCOMPARE(maxGpuLayersThatFit(*file, m_info, 15847, 64, quant::Type::F32, 3, 4), 1);
        QCOMPARE(maxGpuLayersThatFit(*file, m_info, 15848, 64, quant::Type::F32, 3, 4), 2);
        // F16 KV halves the cache.
        QCOMPARE(estimateSplit(*file, m_info, 2, 64, quant::Type::F16, 3, 4).kvGpu, uint64_t(6144));
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
