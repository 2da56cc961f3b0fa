// Qwen3.5 hybrid files (qwen35, qwen35moe) bound from broken metadata or tensors end in one clear
// error from model::loadArchitecture that names the problem (inconsistent delta-net sizes, a
// recurrent_layers list of the wrong length, too many multi-token-prediction layers, a missing or
// misshapen ssm tensor), never a crash; a good file binds with a recurrent state for exactly its
// delta-net layers and K/V for its attention layers only, and the memory estimate (ModelInfo,
// estimateMemory, estimateSplit) counts K/V for the attention layers and the state for the others.
// The files are qwen35-tiny / qwen35moe-tiny synthesized with a 64-token vocabulary made here, then
// rewritten with one change each. The other hybrid, lfm2-tiny (short convolutions on layers 0, 1
// and 3, attention on 2), likewise: broken layer maps and convolution tensors are named, and its
// state is bound and estimated for the convolution layers alone.
#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/synth.h"
#include "model/arch.h"
#include "runtime/memory_budget.h"
#include "tiny_vocab.h"

#include <QtTest>

#include <cstring>
#include <functional>
#include <optional>

using namespace hearth;

namespace {

// qwen35-tiny: 5 blocks: delta nets 0..2, attention 3, the multi-token-prediction layer 4 (attention
// shaped, not run in plain decoding); E 256, 2 KV heads of 64, delta net K 4, S 32, 2 q/k heads,
// 4 v heads: C = (2·2 + 4)·32 = 256 channels.
constexpr int64_t kConvRow = (4 - 1) * 256; // (K-1)·C
constexpr int64_t kSsmRow = 4 * 32 * 32;    // Hv·S²
constexpr uint64_t kStateBytesPerLayer = uint64_t(kConvRow + kSsmRow) * 4;
constexpr uint64_t kKvRow = 2 * 64; // K (or V) values per token of the attention layer

// One change to a file: to its metadata, then to its tensors (return false to drop one).
struct Change {
    std::function<void(gguf::Writer&)> meta;
    std::function<bool(const gguf::TensorInfo&, std::vector<uint64_t>& shape)> tensor;
};

// The file at `path` rewritten with `change`, in memory; the File borrows `bytes`.
Result<gguf::File> rewrite(const std::string& path, const Change& change, std::vector<uint8_t>& bytes) {
    HEARTH_ASSIGN_OR_RETURN(gguf::File in, gguf::File::open(path));
    gguf::Writer w(in.version());
    for (const gguf::KeyValue& kv : in.metadata()) w.set(kv.key, kv.value);
    if (change.meta) change.meta(w);
    for (const gguf::TensorInfo& t : in.tensors()) {
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        const std::vector<uint64_t> before = shape;
        if (change.tensor && !change.tensor(t, shape)) continue;
        const uint8_t* p = in.tensorData(t);
        if (shape == before) {
            HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, t.type, shape, std::vector<uint8_t>(p, p + t.bytes)));
        } else { // a new shape: zeros of the tensor's type
            uint64_t rows = 1;
            for (size_t d = 1; d < shape.size(); ++d) rows *= shape[d];
            HEARTH_ASSIGN_OR_RETURN(const uint64_t rowBytes, quant::rowBytes(t.type, shape[0]));
            HEARTH_RETURN_IF_ERROR(w.addTensor(t.name, t.type, shape, std::vector<uint8_t>(size_t(rowBytes * rows), 0)));
        }
    }
    HEARTH_ASSIGN_OR_RETURN(bytes, w.writeToMemory());
    return gguf::File::fromMemory(bytes.data(), bytes.size());
}

gguf::Value u32(uint32_t v) { return gguf::Value::u32(v); }

Change setKey(const std::string& key, gguf::Value v) {
    return {[key, v](gguf::Writer& w) { w.set(key, v); }, nullptr};
}

Change setKeys(std::vector<std::pair<std::string, gguf::Value>> kvs) {
    return {[kvs](gguf::Writer& w) {
                for (const auto& [k, v] : kvs) w.set(k, v);
            },
            nullptr};
}

// The layer map by full_attention_interval alone: the file's recurrent_layers left out.
Change intervalOnly(uint32_t every) {
    return {[every](gguf::Writer& w) {
                (void)w.remove("qwen35.attention.recurrent_layers");
                w.set("qwen35.full_attention_interval", u32(every));
            },
            nullptr};
}

Change dropTensor(const std::string& name) {
    return {nullptr, [name](const gguf::TensorInfo& t, std::vector<uint64_t>&) { return t.name != name; }};
}

Change reshapeTensor(const std::string& name, std::vector<uint64_t> shape) {
    return {nullptr,
            [name, shape](const gguf::TensorInfo& t, std::vector<uint64_t>& s) {
                if (t.name == name) s = shape;
                return true;
            }};
}

struct BadCase {
    const char* name;
    bool moe;
    Change change;
    std::vector<std::string> needles; // every one must be in the error
    bool infoFails = false;           // readModelInfo rejects it as well
};

std::vector<BadCase> badCases() {
    const std::string q = "qwen35.";
    return {
        {"inner_size not time_step_rank x state_size", false, setKey(q + "ssm.inner_size", u32(100)),
         {"inconsistent ssm sizes", "inner_size 100", "inner_size must be time_step_rank × state_size (128)"}},
        {"time_step_rank not a multiple of group_count", false,
         setKeys({{q + "ssm.time_step_rank", u32(3)}, {q + "ssm.inner_size", u32(96)}}),
         {"inconsistent ssm sizes", "time_step_rank 3", "group_count 2", "must be a multiple of group_count"}},
        {"conv_kernel zero", false, setKey(q + "ssm.conv_kernel", u32(0)),
         {"implausible ssm sizes", "conv_kernel 0"}, true},
        {"conv_kernel huge", false, setKey(q + "ssm.conv_kernel", u32(1000000)),
         {"implausible ssm sizes", "conv_kernel 1000000"}, true},
        {"conv_kernel beyond any count", false, setKey(q + "ssm.conv_kernel", u32(0xFFFFFFF0u)),
         {"qwen35.ssm.conv_kernel", "implausibly large"}, true},
        {"state_size missing", false, {[q](gguf::Writer& w) { (void)w.remove(q + "ssm.state_size"); }, nullptr},
         {"missing key", "qwen35.ssm.state_size"}, true},
        {"group_count zero", false, setKey(q + "ssm.group_count", u32(0)), {"implausible ssm sizes", "group_count 0"},
         true},
        {"recurrent_layers shorter than block_count", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::u32Array({1, 1, 1})),
         {"qwen35.attention.recurrent_layers is u32[3]", "a bool or integer array of 5"}, true},
        {"recurrent_layers longer than block_count", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::numericArray(gguf::ValueType::Bool, {1, 1, 1, 0, 0, 1})),
         {"qwen35.attention.recurrent_layers is bool[6]", "a bool or integer array of 5"}, true},
        {"recurrent_layers as strings", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::stringArray({"1", "1", "1", "0", "0"})),
         {"qwen35.attention.recurrent_layers is string[5]", "expected one bool or integer"}, true},
        {"recurrent_layers with a negative flag", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::i32Array({1, 1, -1, 0, 0})),
         {"qwen35.attention.recurrent_layers[2] is -1", "expected a flag"}, true},
        // A scalar stands for every layer (llama.cpp's get_key_or_arr): here that makes the
        // attention layer a delta net, which its tensors contradict.
        {"recurrent_layers a scalar", false, setKey(q + "attention.recurrent_layers", u32(1)),
         {"layer 3 is a gated delta net", "holds 'blk.3.attn_output.weight'"}},
        {"rope sections of the wrong length", false,
         setKey(q + "rope.dimension_sections", gguf::Value::u32Array({8, 8, 0})),
         {"qwen35.rope.dimension_sections is u32[3]", "expected one integer or an integer array of 4"}},
        {"rope sections as bools", false,
         setKey(q + "rope.dimension_sections", gguf::Value::numericArray(gguf::ValueType::Bool, {1, 1, 0, 0})),
         {"qwen35.rope.dimension_sections is bool[4]"}},
        {"recurrent_layers against the tensors", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::u32Array({0, 1, 1, 1, 0})),
         {"layer 0 is full attention", "recurrent_layers", "holds 'blk.0.ssm_conv1d.weight'"}},
        {"full_attention_interval against the tensors", false, intervalOnly(2),
         {"layer 1 is full attention", "full_attention_interval", "holds 'blk.1.ssm_conv1d.weight'"}},
        {"a delta-net layer with attention tensors", false,
         setKey(q + "attention.recurrent_layers", gguf::Value::u32Array({1, 1, 1, 1, 0})),
         {"layer 3 is a gated delta net", "holds 'blk.3.attn_output.weight'"}},
        {"full_attention_interval zero", false, intervalOnly(0),
         {"full_attention_interval must be positive"}, true},
        {"nextn_predict_layers = block_count", false, setKey(q + "nextn_predict_layers", u32(5)),
         {"nextn_predict_layers 5", "leaves no layer of 5"}, true},
        {"nextn_predict_layers > block_count", false, setKey(q + "nextn_predict_layers", u32(9)),
         {"nextn_predict_layers 9", "leaves no layer of 5"}, true},
        {"MTP layer without its projection", false, dropTensor("blk.4.nextn.eh_proj.weight"),
         {"multi-token-prediction layer 4", "blk.4.nextn.eh_proj.weight"}},
        {"MTP projection of the wrong shape", false, reshapeTensor("blk.4.nextn.eh_proj.weight", {256, 256}),
         {"multi-token-prediction layer 4", "blk.4.nextn.eh_proj.weight", "512 x 256"}},
        {"an attention layer taken for MTP", false, setKey(q + "nextn_predict_layers", u32(2)),
         {"multi-token-prediction layer 3", "blk.3.nextn.eh_proj.weight"}},
        {"ssm_a missing", false, dropTensor("blk.1.ssm_a"), {"missing tensor", "blk.1.ssm_a"}},
        {"ssm_out missing", false, dropTensor("blk.2.ssm_out.weight"), {"missing tensor", "blk.2.ssm_out.weight"}},
        {"ssm_conv1d of the wrong kernel", false, reshapeTensor("blk.0.ssm_conv1d.weight", {3, 256}),
         {"blk.0.ssm_conv1d.weight", "has shape", "expected"}},
        {"ssm_conv1d of the wrong channels", false, reshapeTensor("blk.1.ssm_conv1d.weight", {4, 192}),
         {"blk.1.ssm_conv1d.weight", "has shape", "expected"}},
        {"ssm_norm of the wrong size", false, reshapeTensor("blk.2.ssm_norm.weight", {64}),
         {"blk.2.ssm_norm.weight", "32 elements"}},
        {"moe: inner_size wrong", true, setKey("qwen35moe.ssm.inner_size", u32(64)),
         {"qwen35moe: inconsistent ssm sizes", "inner_size 64"}},
        {"moe: shared expert gate missing", true, dropTensor("blk.3.ffn_gate_inp_shexp.weight"),
         {"missing tensor", "blk.3.ffn_gate_inp_shexp.weight"}},
    };
}

// lfm2-tiny's broken files (the `moe` field unused).
std::vector<BadCase> lfm2BadCases() {
    const std::string a = "lfm2.";
    auto kvHeads = [a](std::vector<int32_t> v) { return setKey(a + "attention.head_count_kv", gguf::Value::i32Array(v)); };
    return {
        {"no attention layer", false, kvHeads({0, 0, 0, 0}), {"head_count_kv is 0 on every layer"}, true},
        {"layer map against the tensors", false, kvHeads({4, 0, 4, 0}),
         {"layer 0 is attention", "holds 'blk.0.shortconv.in_proj.weight'"}},
        {"a convolution layer with attention tensors", false, kvHeads({0, 0, 0, 4}),
         {"layer 2 is a convolution", "holds 'blk.2.attn_q.weight'"}},
        {"attention layers of different K/V heads", false, kvHeads({0, 0, 4, 2}),
         {"head_count_kv differs between attention layers"}},
        {"l_cache missing", false, {[a](gguf::Writer& w) { (void)w.remove(a + "shortconv.l_cache"); }, nullptr},
         {"lfm2.shortconv.l_cache"}, true},
        {"l_cache 1", false, setKey(a + "shortconv.l_cache", u32(1)), {"lfm2.shortconv.l_cache 1 must be 2..16"}, true},
        {"kernel of the wrong taps", false, reshapeTensor("blk.0.shortconv.conv.weight", {4, 256}),
         {"blk.0.shortconv.conv.weight", "has shape", "expected"}},
        {"in_proj missing", false, dropTensor("blk.1.shortconv.in_proj.weight"),
         {"missing tensor", "blk.1.shortconv.in_proj.weight"}},
        {"final norm missing", false, dropTensor("token_embd_norm.weight"), {"missing tensor", "token_embd_norm.weight"}},
    };
}

} // namespace

class TestQwen35Load : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_tiny, m_moe, m_lfm2;

    std::string synth(const char* preset) {
        SynthOptions o;
        o.preset = preset;
        o.typeOrMix = "F32";
        o.vocabPath = m_dir.filePath(QStringLiteral("vocab.gguf")).toStdString();
        o.outPath = m_dir.filePath(QString::fromLatin1(preset) + QStringLiteral(".gguf")).toStdString();
        const Status s = synthesizeModel(o);
        return s.isOk() ? o.outPath : std::string();
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QVERIFY(test::writeTinyVocab(m_dir.filePath(QStringLiteral("vocab.gguf")).toStdString()).isOk());
        m_tiny = synth("qwen35-tiny");
        m_moe = synth("qwen35moe-tiny");
        m_lfm2 = synth("lfm2-tiny");
        QVERIFY(!m_tiny.empty() && !m_moe.empty() && !m_lfm2.empty());
    }

    // The rewrite itself keeps a file loadable (the control for every bad case below).
    void unchangedRewriteLoads() {
        for (const std::string& path : {m_tiny, m_moe, m_lfm2}) {
            std::vector<uint8_t> bytes;
            auto file = rewrite(path, {}, bytes);
            QVERIFY2(file.isOk(), file.status().toString().c_str());
            auto arch = model::loadArchitecture(*file);
            QVERIFY2(arch.isOk(), arch.status().toString().c_str());
            QVERIFY(readModelInfo(*file).isOk());
        }
    }

    void badFileNamesTheProblem_data() {
        QTest::addColumn<int>("index");
        const std::vector<BadCase> cases = badCases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].name) << int(i);
    }
    void badFileNamesTheProblem() {
        QFETCH(int, index);
        checkBadCase(badCases()[size_t(index)], m_tiny);
    }
    void lfm2BadFileNamesTheProblem_data() {
        QTest::addColumn<int>("index");
        const std::vector<BadCase> cases = lfm2BadCases();
        for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].name) << int(i);
    }
    void lfm2BadFileNamesTheProblem() {
        QFETCH(int, index);
        checkBadCase(lfm2BadCases()[size_t(index)], m_lfm2);
    }

    // lfm2-tiny: a convolution window (2 × 256 values) for layers 0, 1 and 3; K/V for layer 2.
    void lfm2BindsStateForTheConvolutionLayers() {
        auto file = gguf::File::open(m_lfm2);
        QVERIFY(file.isOk());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        const model::ModelDims& d = (*arch)->dims();
        QVERIFY(d.recurrent());
        for (int l = 0; l < 4; ++l) {
            QCOMPARE(d.state[size_t(l)].convRow, l == 2 ? int64_t(0) : int64_t(2 * 256));
            QCOMPARE(d.state[size_t(l)].ssmRow, int64_t(0));
            QCOMPARE(d.kv[size_t(l)].nHeadKv, l == 2 ? 4 : 0);
        }
        auto info = readModelInfo(*file);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->recurrentLayers, 3u);
        QCOMPARE(info->attentionLayers(), 1u);
        QCOMPARE(info->stateBytesPerSequence(), uint64_t(3 * 2 * 256 * 4));
    }

private:
    void checkBadCase(const BadCase& c, const std::string& good) {
        std::vector<uint8_t> bytes;
        auto file = rewrite(c.moe ? m_moe : good, c.change, bytes);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(!arch.isOk(), "a broken file bound");
        const std::string message = arch.status().toString();
        qInfo("%s", message.c_str());
        for (const std::string& needle : c.needles)
            QVERIFY2(message.find(needle) != std::string::npos, ("'" + needle + "' not in: " + message).c_str());
        // The memory estimate reads the same layout: what it cannot read it says, else it still
        // describes the file (the loader's error then shows when loading).
        auto info = readModelInfo(*file);
        QCOMPARE(!info.isOk(), c.infoFails);
        if (!info.isOk()) qInfo("model info: %s", info.status().toString().c_str());
    }

private Q_SLOTS:
    void tinyBindsStateForTheDeltaNetLayers() {
        auto file = gguf::File::open(m_tiny);
        QVERIFY(file.isOk());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        const model::ModelDims& d = (*arch)->dims();
        QCOMPARE(d.nLayer, 4);
        QCOMPARE(d.state.size(), size_t(4));
        for (int l = 0; l < 3; ++l) {
            QCOMPARE(d.state[size_t(l)].convRow, kConvRow);
            QCOMPARE(d.state[size_t(l)].ssmRow, kSsmRow);
            QCOMPARE(d.kv[size_t(l)].kRow(), int64_t(0));
            QCOMPARE(d.kv[size_t(l)].vRow(), int64_t(0));
        }
        QCOMPARE(d.state[3].convRow, int64_t(0));
        QCOMPARE(d.state[3].ssmRow, int64_t(0));
        QCOMPARE(d.kv[3].kRow(), int64_t(kKvRow));
        QCOMPARE(d.kv[3].vRow(), int64_t(kKvRow));
        QVERIFY(d.recurrent());
        QCOMPARE(d.stateBytesPerSlot(), 3 * kStateBytesPerLayer);

        // The same layout from the metadata alone.
        auto info = readModelInfo(*file);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->blockCount, 5u);
        QCOMPARE(info->recurrentLayers, 3u);
        QCOMPARE(info->attentionLayers(), 1u);
        QCOMPARE(info->nextnLayers, 1u);
        QVERIFY(info->recurrentLayer == (std::vector<bool>{true, true, true, false, false}));
        QCOMPARE(info->ssmConvKernel, 4u);
        QCOMPARE(info->ssmStateSize, 32u);
        QCOMPARE(info->ssmTimeStepRank, 4u);
        QCOMPARE(info->ssmGroupCount, 2u);
        QCOMPARE(info->ssmInnerSize, 128u);
        QCOMPARE(info->stateBytesPerSequence(), d.stateBytesPerSlot());
    }

    // K/V for the one attention layer (not the MTP layer, attention-shaped as it is), the state of
    // three delta-net layers.
    void estimateCountsKvAndStateByLayerKind() {
        auto file = gguf::File::open(m_tiny);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const MemoryEstimate m = estimateMemory(*info, 100, quant::Type::F32);
        QCOMPARE(m.kvBytes, uint64_t(2 * kKvRow * 100 * 4));
        QCOMPARE(m.stateBytes, 3 * kStateBytesPerLayer);
        QCOMPARE(m.totalBytes(), m.weightBytes + m.kvBytes + m.stateBytes);
        // A plain decoder's count is unchanged: every layer has K/V, no state.
        ModelInfo plain = *info;
        plain.recurrentLayers = plain.nextnLayers = 0;
        plain.recurrentLayer.clear();
        QCOMPARE(estimateMemory(plain, 100, quant::Type::F32).kvBytes, 5 * m.kvBytes);
        QCOMPARE(estimateMemory(plain, 100, quant::Type::F32).stateBytes, uint64_t(0));

        // The split: 3 sequences of 64 positions (4 blocks of 16 each); each delta-net layer's
        // state where its layer runs. The graph builds (compute memory > 0: not the name-based guess).
        constexpr int kSeqs = 3;
        const uint64_t kvAll = uint64_t(4 * kSeqs * 16) * kKvRow * 2 * 4;
        // As many state slots as the engine takes: the 3 live ones, snapshots, forks.
        const uint64_t slots = uint64_t(runtime::stateSlotsFor(3 * kStateBytesPerLayer, kSeqs, kvAll, 0, true,
                                                               runtime::availableMemoryBytes()));
        QVERIFY(slots >= 2 * kSeqs);
        const SplitEstimate cpu = estimateSplit(*file, *info, 0, 64, quant::Type::F32, kSeqs, 8);
        QVERIFY(cpu.computeCpu > 0);
        QCOMPARE(cpu.kvCpu, kvAll);
        QCOMPARE(cpu.stateCpu, slots * 3 * kStateBytesPerLayer);
        QCOMPARE(cpu.stateGpu, uint64_t(0));
        QCOMPARE(cpu.gpuTotal(), uint64_t(0));
        QCOMPARE(cpu.cpuTotal(), cpu.weightsCpu + cpu.kvCpu + cpu.stateCpu + cpu.computeCpu);
        const SplitEstimate two = estimateSplit(*file, *info, 2, 64, quant::Type::F32, kSeqs, 8);
        QVERIFY(two.computeGpu > 0);
        QCOMPARE(two.stateGpu, slots * 2 * kStateBytesPerLayer);
        QCOMPARE(two.stateCpu, slots * 1 * kStateBytesPerLayer);
        QCOMPARE(two.kvGpu, uint64_t(0));
        QCOMPARE(two.kvCpu, kvAll);
        const SplitEstimate all = estimateSplit(*file, *info, 4, 64, quant::Type::F32, kSeqs, 8);
        QCOMPARE(all.stateGpu, slots * 3 * kStateBytesPerLayer);
        QCOMPARE(all.kvGpu, kvAll);
        QCOMPARE(all.stateCpu + all.kvCpu, uint64_t(0));
        QCOMPARE(all.gpuTotal(), all.weightsGpu + all.kvGpu + all.stateGpu + all.computeGpu);
    }

    // Without its MTP layer the file binds the same trunk and the estimate is unchanged: the
    // MTP layer held neither K/V nor state.
    void mtpLayerHoldsNothing() {
        std::vector<uint8_t> bytes;
        Change c = setKeys({{"qwen35.block_count", u32(4)},
                            {"qwen35.nextn_predict_layers", u32(0)},
                            {"qwen35.attention.recurrent_layers", gguf::Value::numericArray(gguf::ValueType::Bool, {1, 1, 1, 0})}});
        c.tensor = [](const gguf::TensorInfo& t, std::vector<uint64_t>&) { return t.name.rfind("blk.4.", 0) != 0; };
        auto file = rewrite(m_tiny, c, bytes);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        QCOMPARE((*arch)->dims().nLayer, 4);
        QCOMPARE((*arch)->dims().stateBytesPerSlot(), 3 * kStateBytesPerLayer);
        auto info = readModelInfo(*file);
        QVERIFY2(info.isOk(), info.status().toString().c_str());
        QCOMPARE(info->nextnLayers, 0u);
        QCOMPARE(info->attentionLayers(), 1u);
        auto withMtp = gguf::File::open(m_tiny);
        QVERIFY(withMtp.isOk());
        auto infoMtp = readModelInfo(*withMtp);
        QVERIFY(infoMtp.isOk());
        QCOMPARE(estimateMemory(*info, 100, quant::Type::F16).kvBytes, estimateMemory(*infoMtp, 100, quant::Type::F16).kvBytes);
        QCOMPARE(estimateMemory(*info, 100, quant::Type::F16).stateBytes,
                 estimateMemory(*infoMtp, 100, quant::Type::F16).stateBytes);
        const SplitEstimate e = estimateSplit(*file, *info, 4, 64, quant::Type::F16, 2, 8);
        const SplitEstimate eMtp = estimateSplit(*withMtp, *infoMtp, 4, 64, quant::Type::F16, 2, 8);
        QCOMPARE(e.kvGpu, eMtp.kvGpu);
        QCOMPARE(e.stateGpu, eMtp.stateGpu);
        QCOMPARE(e.weightsGpu, eMtp.weightsGpu);
        QVERIFY(e.stateGpu > 0 && e.kvGpu > 0);
    }

    // recurrent_layers, where the file has it, decides over full_attention_interval; in every type
    // the converters write it in (bools, as llama.cpp's gguf-py does from layer_types; integers).
    void recurrentLayersListIsRead() {
        using gguf::Value;
        for (const Value& flags : {Value::u32Array({1, 1, 1, 0, 0}), Value::numericArray(gguf::ValueType::Bool, {1, 1, 1, 0, 0}),
                                   Value::numericArray(gguf::ValueType::I8, {1, 1, 1, 0, 0})}) {
            std::vector<uint8_t> bytes;
            Change c = setKeys({{"qwen35.attention.recurrent_layers", flags}, {"qwen35.full_attention_interval", u32(2)}});
            auto file = rewrite(m_tiny, c, bytes);
            QVERIFY(file.isOk());
            auto arch = model::loadArchitecture(*file);
            QVERIFY2(arch.isOk(), arch.status().toString().c_str());
            QCOMPARE((*arch)->dims().stateBytesPerSlot(), 3 * kStateBytesPerLayer);
            auto info = readModelInfo(*file);
            QVERIFY2(info.isOk(), info.status().toString().c_str());
            QCOMPARE(info->recurrentLayers, 3u);
        }
    }
};

QTEST_GUILESS_MAIN(TestQwen35Load)
#include "test_qwen35_load.moc"
