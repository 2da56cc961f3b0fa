// Binding an architecture from hostile or broken files ends in one clear error, never a crash: an
// unknown architecture (naming the supported ones), a missing tensor, a tensor of the wrong shape
// or type, impossible hyper-parameters, a malformed gemma3 sliding-window pattern, expert counts
// that disagree with the expert tensors, fused phi3 projections of the wrong size; a well-formed
// tiny file of each architecture binds and runs a step on the CPU and the reference, and phi3
// takes its short or long RoPE factors by the context it serves. gemma4: its per-layer pattern
// array, per-layer KV heads and head sizes, shared-KV layers and per-layer embeddings each give a
// clear error when they do not fit the file. Every architecture reads embedding rows through the
// file (not the mapping, which would keep the table's pages resident).
#include "hearth/gguf.h"
#include "hearth/synth.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "test_support.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>

using namespace hearth;

Q_DECLARE_METATYPE(hearth::gguf::Value)

namespace {

// A tiny model of `arch`: E 8, vocabulary 16, 2 layers, 2 query heads and 1 KV head of 4, F 16;
// tests change its keys and tensor list before it is written.
struct Spec {
    std::string arch = "llama";
    std::map<std::string, gguf::Value> keys;
    std::map<std::string, std::vector<uint64_t>> tensors; // name -> shape (F32)
};

// gemma4: layer 0 slides (window 4, 1 KV head of 4), layer 1 is full (2 KV heads of 8, V = K,
// rope_freqs) and has 4 experts of 8 (fused gate/up, 2 per token) beside its dense feed-forward.
Spec addGemma4(Spec s) {
    const std::string a = "gemma4.";
    s.keys[a + "attention.head_count_kv"] = gguf::Value::u32Array({1, 2});
    s.keys[a + "attention.key_length"] = gguf::Value::u32(8);
    s.keys[a + "attention.value_length"] = gguf::Value::u32(8);
    s.keys[a + "attention.key_length_swa"] = gguf::Value::u32(4);
    s.keys[a + "attention.value_length_swa"] = gguf::Value::u32(4);
    s.keys[a + "rope.dimension_count"] = gguf::Value::u32(8);
    s.keys[a + "rope.dimension_count_swa"] = gguf::Value::u32(4);
    s.keys[a + "attention.sliding_window"] = gguf::Value::u32(4);
    s.keys[a + "attention.sliding_window_pattern"] = gguf::Value::numericArray(gguf::ValueType::Bool, {1, 0});
    s.keys[a + "final_logit_softcapping"] = gguf::Value::f32(30.0f);
    s.keys[a + "expert_count"] = gguf::Value::u32(4);
    s.keys[a + "expert_used_count"] = gguf::Value::u32(2);
    s.keys[a + "expert_feed_forward_length"] = gguf::Value::u32(8);
    s.tensors["rope_freqs.weight"] = {4};
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        const uint64_t D = l == 0 ? 4 : 8, kv = l == 0 ? 4 : 16;
        for (const char* n : {"attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"}) s.tensors[p + n + ".weight"] = {8};
        s.tensors[p + "attn_q.weight"] = {8, 2 * D};
        s.tensors[p + "attn_k.weight"] = {8, kv};
        if (l == 0) s.tensors[p + "attn_v.weight"] = {8, kv};
        s.tensors[p + "attn_output.weight"] = {2 * D, 8};
        s.tensors[p + "attn_q_norm.weight"] = {D};
        s.tensors[p + "attn_k_norm.weight"] = {D};
        s.tensors[p + "layer_output_scale.weight"] = {1};
        s.tensors[p + "ffn_gate.weight"] = {8, 16};
        s.tensors[p + "ffn_up.weight"] = {8, 16};
        s.tensors[p + "ffn_down.weight"] = {16, 8};
    }
    const std::string p = "blk.1.";
    s.tensors[p + "ffn_gate_inp.weight"] = {8, 4};
    for (const char* n : {"ffn_gate_inp.scale", "pre_ffw_norm_2.weight", "post_ffw_norm_1.weight", "post_ffw_norm_2.weight"})
        s.tensors[p + n] = {8};
    s.tensors[p + "ffn_gate_up_exps.weight"] = {8, 16, 4};
    s.tensors[p + "ffn_down_exps.weight"] = {8, 8, 4};
    s.tensors[p + "ffn_down_exps.scale"] = {4};
    return s;
}

Spec tinySpec(const std::string& arch) {
    Spec s;
    s.arch = arch;
    const std::string a = arch + ".";
    s.keys[a + "block_count"] = gguf::Value::u32(2);
    s.keys[a + "embedding_length"] = gguf::Value::u32(8);
    s.keys[a + "feed_forward_length"] = gguf::Value::u32(16);
    s.keys[a + "attention.head_count"] = gguf::Value::u32(2);
    s.keys[a + "attention.head_count_kv"] = gguf::Value::u32(1);
    s.keys[a + "attention.layer_norm_rms_epsilon"] = gguf::Value::f32(1e-5f);
    const bool moe = arch == "qwen3moe" || arch == "gpt-oss";
    if (arch == "gpt-oss") {
        s.keys[a + "attention.sliding_window"] = gguf::Value::u32(4);
        s.tensors["output.weight"] = {8, 16};
    }
    if (moe) {
        s.keys[a + "expert_count"] = gguf::Value::u32(4);
        s.keys[a + "expert_used_count"] = gguf::Value::u32(2);
        s.keys[a + "expert_feed_forward_length"] = gguf::Value::u32(8);
    }
    if (arch == "mistral3") {
        // YaRN x4 from an original context of 8 positions, the attention temperature per 8.
        s.keys[a + "rope.scaling.type"] = gguf::Value::string("yarn");
        s.keys[a + "rope.scaling.factor"] = gguf::Value::f32(4.0f);
        s.keys[a + "rope.scaling.original_context_length"] = gguf::Value::u32(8);
        s.keys[a + "attention.temperature_scale"] = gguf::Value::f32(0.1f);
    }
    if (arch == "phi3") {
        // LongRoPE from an original context of 16 positions, its attention factor, a window.
        s.keys[a + "rope.scaling.original_context_length"] = gguf::Value::u32(16);
        s.keys[a + "rope.scaling.attn_factor"] = gguf::Value::f32(1.2f);
        s.keys[a + "attention.sliding_window"] = gguf::Value::u32(4);
        s.tensors["rope_factors_short.weight"] = {2};
        s.tensors["rope_factors_long.weight"] = {2};
    }
    s.tensors["token_embd.weight"] = {8, 16};
    s.tensors["output_norm.weight"] = {8};
    if (arch == "gemma4") return addGemma4(s);
    for (int l = 0; l < 2; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        for (const char* n : {"attn_norm", "ffn_norm"}) s.tensors[p + n + ".weight"] = {8};
        s.tensors[p + "attn_q.weight"] = {8, 8};
        s.tensors[p + "attn_k.weight"] = {8, 4};
        s.tensors[p + "attn_v.weight"] = {8, 4};
        s.tensors[p + "attn_output.weight"] = {8, 8};
        if (moe) {
            // 4 experts of hidden width 8, 2 per token.
            s.tensors[p + "ffn_gate_inp.weight"] = {8, 4};
            s.tensors[p + "ffn_gate_exps.weight"] = {8, 8, 4};
            s.tensors[p + "ffn_up_exps.weight"] = {8, 8, 4};
            s.tensors[p + "ffn_down_exps.weight"] = {8, 8, 4};
            if (arch == "gpt-oss") {
                s.tensors[p + "ffn_gate_inp.bias"] = {4};
                for (const char* n : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) s.tensors[p + n + ".bias"] = {8, 4};
                for (const char* n : {"attn_q", "attn_k", "attn_v"}) s.tensors[p + n + ".bias"] = {std::string(n) == "attn_q" ? 8u : 4u};
                s.tensors[p + "attn_output.bias"] = {8};
                s.tensors[p + "attn_sinks.weight"] = {2};
                s.tensors[p + "post_attention_norm.weight"] = {8};
                s.tensors.erase(p + "ffn_norm.weight");
            }
        } else {
            s.tensors[p + "ffn_gate.weight"] = {8, 16};
            s.tensors[p + "ffn_up.weight"] = {8, 16};
            s.tensors[p + "ffn_down.weight"] = {16, 8};
        }
        if (arch == "qwen2")
            for (const char* n : {"attn_q", "attn_k", "attn_v"}) s.tensors[p + n + ".bias"] = {std::string(n) == "attn_q" ? 8u : 4u};
        if (arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3")
            for (const char* n : {"attn_q_norm", "attn_k_norm"}) s.tensors[p + n + ".weight"] = {4};
        if (arch == "gemma3")
            for (const char* n : {"post_attention_norm", "post_ffw_norm"}) s.tensors[p + n + ".weight"] = {8};
        if (arch == "phi3") {
            // q/k/v fused (8 + 4 + 4 rows), gate and up fused (16 + 16).
            for (const char* n : {"attn_q", "attn_k", "attn_v", "ffn_gate"}) s.tensors.erase(p + n + ".weight");
            s.tensors[p + "attn_qkv.weight"] = {8, 16};
            s.tensors[p + "ffn_up.weight"] = {8, 32};
        }
    }
    return s;
}

struct Loaded {
    std::vector<uint8_t> bytes; // the file's bytes (the File borrows them)
    std::optional<gguf::File> file;
    Status status;
    std::unique_ptr<model::Architecture> arch;
};

std::unique_ptr<Loaded> bind(const Spec& s) {
    auto out = std::make_unique<Loaded>();
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string(s.arch));
    for (const auto& [k, v] : s.keys) w.set(k, v);
    int seed = 1;
    for (const auto& [name, shape] : s.tensors) {
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        std::vector<float> values(static_cast<size_t>(n));
        for (size_t i = 0; i < values.size(); ++i) values[i] = float((int(i) * 7 + seed) % 13 - 6) * 0.05f;
        // Frequency factors divide the angle: positive, or the logits would be NaN.
        if (name == "rope_freqs.weight") std::fill(values.begin(), values.end(), 1.0f);
        ++seed;
        std::vector<uint8_t> data(values.size() * 4);
        std::memcpy(data.data(), values.data(), data.size());
        const Status st = w.addTensor(name, quant::Type::F32, shape, std::move(data));
        if (!st.isOk()) {
            out->status = st;
            return out;
        }
    }
    auto bytes = w.writeToMemory();
    if (!bytes) {
        out->status = bytes.status();
        return out;
    }
    out->bytes = std::move(*bytes);
    auto f = gguf::File::fromMemory(out->bytes.data(), out->bytes.size());
    if (!f) {
        out->status = f.status();
        return out;
    }
    out->file.emplace(std::move(*f));
    auto arch = model::loadArchitecture(*out->file);
    out->status = arch.status();
    if (arch) out->arch = std::move(*arch);
    return out;
}

// One step of 20 tokens on `device`: the last token's logits; empty (with a warning) on failure.
std::vector<float> runStep(const model::Architecture& arch, const char* device) {
    runtime::RunnerConfig rc;
    rc.device = device;
    rc.numBlocks = 2;
    auto runner = runtime::ModelRunner::create(arch, rc);
    if (!runner) {
        qWarning("%s", runner.status().toString().c_str());
        return {};
    }
    const std::vector<int32_t> table{0, 1};
    graph::Batch b;
    b.blockTables = {table};
    for (int p = 0; p < 20; ++p) b.tokens.push_back({p % 16, p, 0, p == 19});
    std::vector<float> logits;
    const Status s = (*runner)->forward(b, logits);
    if (!s.isOk()) qWarning("%s", s.toString().c_str());
    return s.isOk() ? logits : std::vector<float>{};
}

} // namespace

class TestModelLoad : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void wellFormedFilesBindAndRun_data() {
        QTest::addColumn<QString>("arch");
        for (const char* a : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "gpt-oss", "phi3", "mistral3", "gemma4"})
            QTest::newRow(a) << QString::fromLatin1(a);
    }
    void wellFormedFilesBindAndRun() {
        QFETCH(QString, arch);
        auto m = bind(tinySpec(arch.toStdString()));
        QVERIFY2(m->status.isOk(), m->status.toString().c_str());
        QCOMPARE(m->arch->dims().archName, arch.toStdString());
        for (const char* device : {"cpu", "ref"}) QCOMPARE(runStep(*m->arch, device).size(), size_t(16));
    }

    // A key llama.cpp reads as "one value or one per layer", written in another type (any integer
    // width or signedness, scalar or array; bools or integers for flags; f64 for reals), gives
    // the same model: the same logits as the file as written above.
    void perLayerKeysInAnyType_data() {
        QTest::addColumn<QString>("arch");
        QTest::addColumn<QString>("key");
        QTest::addColumn<gguf::Value>("value");
        using gguf::Value;
        using gguf::ValueType;
        auto row = [](const char* name, const char* arch, const char* key, const Value& v) {
            QTest::newRow(name) << QString::fromLatin1(arch) << QString::fromLatin1(key) << v;
        };
        row("head counts as an i32 array", "llama", "attention.head_count", Value::i32Array({2, 2}));
        row("KV heads as a u8 scalar", "llama", "attention.head_count_kv", Value::u8(1));
        row("KV heads as an i64 array", "llama", "attention.head_count_kv",
            Value::numericArray(ValueType::I64, {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}));
        row("feed-forward as a u16 array", "llama", "feed_forward_length", Value::numericArray(ValueType::U16, {16, 0, 16, 0}));
        row("rms epsilon as f64", "llama", "attention.layer_norm_rms_epsilon", Value::f64(double(1e-5f)));
        row("experts used as an i32 array", "qwen3moe", "expert_used_count", Value::i32Array({2, 2}));
        row("expert width as an i16 scalar", "qwen3moe", "expert_feed_forward_length", Value::i16(8));
        row("gemma4 KV heads as an i32 array", "gemma4", "attention.head_count_kv", Value::i32Array({1, 2}));
        row("gemma4 pattern as a u32 array", "gemma4", "attention.sliding_window_pattern", Value::u32Array({1, 0}));
        row("gemma4 pattern as an i8 array", "gemma4", "attention.sliding_window_pattern",
            Value::numericArray(ValueType::I8, {1, 0}));
    }
    void perLayerKeysInAnyType() {
        QFETCH(QString, arch);
        QFETCH(QString, key);
        QFETCH(gguf::Value, value);
        const Spec canonical = tinySpec(arch.toStdString());
        Spec changed = canonical;
        changed.keys[arch.toStdString() + "." + key.toStdString()] = value;
        auto a = bind(canonical), b = bind(changed);
        QVERIFY2(a->status.isOk(), a->status.toString().c_str());
        QVERIFY2(b->status.isOk(), b->status.toString().c_str());
        const std::vector<float> x = runStep(*a->arch, "cpu"), y = runStep(*b->arch, "cpu");
        QCOMPARE(x.size(), size_t(16));
        QVERIFY(std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); }));
        QCOMPARE(y, x);
    }

    void brokenFilesGiveOneClearError_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("unknown architecture") << 0 << int(ErrorCode::Unsupported) << QStringLiteral("supported: llama");
        QTest::newRow("missing tensor") << 1 << int(ErrorCode::NotFound) << QStringLiteral("blk.1.ffn_up.weight");
        QTest::newRow("wrong shape") << 2 << int(ErrorCode::InvalidFormat) << QStringLiteral("blk.0.attn_k.weight");
        QTest::newRow("heads do not divide") << 3 << int(ErrorCode::InvalidFormat) << QStringLiteral("head_count");
        QTest::newRow("absurd block count") << 4 << int(ErrorCode::InvalidFormat) << QStringLiteral("block_count");
        QTest::newRow("missing key") << 5 << int(ErrorCode::NotFound) << QStringLiteral("embedding_length");
        QTest::newRow("qwen2 without biases") << 6 << int(ErrorCode::NotFound) << QStringLiteral("attn_q.bias");
        QTest::newRow("gemma3 pattern of the wrong length") << 7 << int(ErrorCode::InvalidFormat)
                                                            << QStringLiteral("sliding_window_pattern");
        QTest::newRow("norm of the wrong size") << 8 << int(ErrorCode::InvalidFormat) << QStringLiteral("output_norm.weight");
        QTest::newRow("rope dims above the head") << 9 << int(ErrorCode::InvalidFormat) << QStringLiteral("rope.dimension_count");
        QTest::newRow("more experts used than exist") << 10 << int(ErrorCode::InvalidFormat) << QStringLiteral("expert_used_count");
        QTest::newRow("expert count that does not match the tensors")
            << 11 << int(ErrorCode::InvalidFormat) << QStringLiteral("blk.0.ffn_gate_inp.weight");
        QTest::newRow("an expert tensor of the wrong shape") << 12 << int(ErrorCode::InvalidFormat)
                                                             << QStringLiteral("blk.1.ffn_down_exps.weight");
        QTest::newRow("experts without a count") << 13 << int(ErrorCode::NotFound) << QStringLiteral("qwen3moe.expert_count");
        QTest::newRow("gpt-oss without sinks") << 14 << int(ErrorCode::NotFound) << QStringLiteral("blk.0.attn_sinks.weight");
        QTest::newRow("gpt-oss expert bias of the wrong shape") << 15 << int(ErrorCode::InvalidFormat)
                                                                << QStringLiteral("blk.1.ffn_up_exps.bias");
        QTest::newRow("unknown RoPE scaling") << 16 << int(ErrorCode::Unsupported) << QStringLiteral("RoPE scaling 'warp'");
        QTest::newRow("phi3 fused QKV of the wrong size") << 17 << int(ErrorCode::InvalidFormat)
                                                          << QStringLiteral("tensor 'blk.1.attn_qkv.weight' has shape [8, 12], expected [8, 16]");
        QTest::newRow("phi3 fused gate/up of the wrong size") << 18 << int(ErrorCode::InvalidFormat)
                                                              << QStringLiteral("tensor 'blk.0.ffn_up.weight'");
        QTest::newRow("phi3 LongRoPE factors of the wrong size") << 19 << int(ErrorCode::InvalidFormat)
                                                                 << QStringLiteral("rope_factors_long.weight");
        QTest::newRow("gemma4 pattern of the wrong length") << 20 << int(ErrorCode::InvalidFormat)
                                                            << QStringLiteral("sliding_window_pattern is bool[3], expected one bool or "
                                                                              "integer, or a bool or integer array of 2");
        QTest::newRow("gemma4 pattern that is not an array") << 21 << int(ErrorCode::InvalidFormat)
                                                             << QStringLiteral("sliding_window_pattern must be an array");
        QTest::newRow("gemma4 sliding head size that does not match the tensors")
            << 22 << int(ErrorCode::InvalidFormat) << QStringLiteral("tensor 'blk.0.attn_q.weight' has shape [8, 8], expected [8, 16]");
        QTest::newRow("gemma4 KV heads of the wrong length") << 23 << int(ErrorCode::InvalidFormat)
                                                             << QStringLiteral("head_count_kv is u32[3], expected one integer or an "
                                                                               "integer array of 2");
        QTest::newRow("gemma4 shared KV layers leaving too few") << 24 << int(ErrorCode::InvalidFormat)
                                                                 << QStringLiteral("fewer than 2 layers with their own K/V");
        QTest::newRow("gemma4 per-layer embeddings without their table") << 25 << int(ErrorCode::NotFound)
                                                                         << QStringLiteral("per_layer_token_embd.weight");
        QTest::newRow("gemma4 without rope_freqs") << 26 << int(ErrorCode::NotFound) << QStringLiteral("rope_freqs.weight");
        QTest::newRow("gemma4 without key_length_swa") << 27 << int(ErrorCode::NotFound)
                                                       << QStringLiteral("gemma4.attention.key_length_swa");
        QTest::newRow("gemma4 full layer with V of another head size") << 28 << int(ErrorCode::Unsupported)
                                                                       << QStringLiteral("value length != key length");
        // Per-layer keys ("one value or one per layer"): what they hold and what was expected.
        QTest::newRow("head counts as bools") << 29 << int(ErrorCode::InvalidFormat)
                                              << QStringLiteral("llama.attention.head_count is bool[2], expected one integer "
                                                                "or an integer array of 2");
        QTest::newRow("KV head counts as strings") << 30 << int(ErrorCode::InvalidFormat)
                                                   << QStringLiteral("llama.attention.head_count_kv is string[2]");
        QTest::newRow("a negative feed-forward length") << 31 << int(ErrorCode::InvalidFormat)
                                                        << QStringLiteral("llama.feed_forward_length[1] is -16, expected a count");
        QTest::newRow("head counts that differ by layer") << 32 << int(ErrorCode::Unsupported)
                                                          << QStringLiteral("llama.attention.head_count differs between layers "
                                                                            "(2 on layer 0, 4 on layer 1)");
        QTest::newRow("experts used as a bool") << 33 << int(ErrorCode::InvalidFormat)
                                                << QStringLiteral("qwen3moe.expert_used_count is bool, expected one integer");
        QTest::newRow("a per-layer array one short") << 34 << int(ErrorCode::InvalidFormat)
                                                     << QStringLiteral("llama.feed_forward_length is i32[1], expected one "
                                                                       "integer or an integer array of 2");
    }
    void brokenFilesGiveOneClearError() {
        QFETCH(int, which);
        QFETCH(int, code);
        QFETCH(QString, mentions);
        Spec s = tinySpec(which == 33   ? "qwen3moe"
                          : which >= 29 ? "llama"
                          : which >= 20 ? "gemma4"
                          : which == 6  ? "qwen2"
                          : which == 7  ? "gemma3"
                          : which >= 17 ? "phi3"
                          : which >= 14 ? "gpt-oss"
                          : which >= 10 ? "qwen3moe"
                                        : "llama");
        switch (which) {
        case 0: s = tinySpec("mamba9"); break;
        case 1: s.tensors.erase("blk.1.ffn_up.weight"); break;
        case 2: s.tensors["blk.0.attn_k.weight"] = {8, 5}; break;
        case 3: s.keys["llama.attention.head_count_kv"] = gguf::Value::u32(3); break;
        case 4: s.keys["llama.block_count"] = gguf::Value::u32(1u << 29); break;
        case 5: s.keys.erase("llama.embedding_length"); break;
        case 6:
            for (int l = 0; l < 2; ++l) s.tensors.erase("blk." + std::to_string(l) + ".attn_q.bias");
            break;
        case 7:
            s.keys["gemma3.attention.sliding_window"] = gguf::Value::u32(4);
            s.keys["gemma3.attention.sliding_window_pattern"] = gguf::Value::u32Array({1, 0, 1});
            break;
        case 8: s.tensors["output_norm.weight"] = {7}; break;
        case 9: s.keys["llama.rope.dimension_count"] = gguf::Value::u32(64); break;
        case 10: s.keys["qwen3moe.expert_used_count"] = gguf::Value::u32(5); break;
        case 11: s.keys["qwen3moe.expert_count"] = gguf::Value::u32(3); break;
        case 12: s.tensors["blk.1.ffn_down_exps.weight"] = {8, 8, 3}; break;
        case 13: s.keys.erase("qwen3moe.expert_count"); break;
        case 14: s.tensors.erase("blk.0.attn_sinks.weight"); break;
        case 15: s.tensors["blk.1.ffn_up_exps.bias"] = {8, 3}; break;
        case 16: s.keys["gpt-oss.rope.scaling.type"] = gguf::Value::string("warp"); break;
        case 17: s.tensors["blk.1.attn_qkv.weight"] = {8, 12}; break;
        case 18: s.tensors["blk.0.ffn_up.weight"] = {8, 16}; break;
        case 19: s.tensors["rope_factors_long.weight"] = {4}; break;
        case 20: s.keys["gemma4.attention.sliding_window_pattern"] = gguf::Value::numericArray(gguf::ValueType::Bool, {1, 0, 1}); break;
        case 21: s.keys["gemma4.attention.sliding_window_pattern"] = gguf::Value::u32(2); break;
        case 22: s.keys["gemma4.attention.key_length_swa"] = s.keys["gemma4.attention.value_length_swa"] = gguf::Value::u32(8); break;
        case 23: s.keys["gemma4.attention.head_count_kv"] = gguf::Value::u32Array({1, 2, 2}); break;
        case 24: s.keys["gemma4.attention.shared_kv_layers"] = gguf::Value::u32(1); break;
        case 25: s.keys["gemma4.embedding_length_per_layer_input"] = gguf::Value::u32(4); break;
        case 26: s.tensors.erase("rope_freqs.weight"); break;
        case 27: s.keys.erase("gemma4.attention.key_length_swa"); break;
        case 28: s.keys["gemma4.attention.value_length"] = gguf::Value::u32(4); break;
        case 29: s.keys["llama.attention.head_count"] = gguf::Value::numericArray(gguf::ValueType::Bool, {1, 1}); break;
        case 30: s.keys["llama.attention.head_count_kv"] = gguf::Value::stringArray({"1", "1"}); break;
        case 31: s.keys["llama.feed_forward_length"] = gguf::Value::i32Array({16, -16}); break;
        case 32: s.keys["llama.attention.head_count"] = gguf::Value::i32Array({2, 4}); break;
        case 33: s.keys["qwen3moe.expert_used_count"] = gguf::Value::boolean(true); break;
        case 34: s.keys["llama.feed_forward_length"] = gguf::Value::i32Array({16}); break;
        }
        auto m = bind(s);
        qInfo("%s", m->status.toString().c_str());
        QVERIFY(!m->status.isOk());
        QCOMPARE(int(m->status.code()), code);
        QVERIFY2(m->status.message().find(mentions.toStdString()) != std::string::npos, m->status.toString().c_str());
    }

    // phi3 rotates with the long factors only when the context it serves passes the original
    // 16 positions (llama.cpp's rule): the engine's context per sequence, else the K/V pool's
    // slots. The attention factor is folded into q after RoPE, so the rope nodes stay plain
    // (what the GPUs run), and the fused matrices become views of the file's rows.
    void phi3PicksRopeFactorsByContext() {
        auto m = bind(tinySpec("phi3"));
        QVERIFY2(m->status.isOk(), m->status.toString().c_str());
        auto factorsUsed = [&](int64_t contextLength, int numBlocks) {
            model::KvSetup kv;
            kv.type = quant::Type::F32;
            kv.numBlocks = numBlocks;
            kv.contextLength = contextLength;
            const graph::Graph g = m->arch->buildGraph({4, 1, 64}, kv);
            std::set<std::string> names;
            for (const graph::Node& n : g.nodes()) {
                if (n.op != graph::Op::Rope) continue;
                if (!n.rope.plain()) return std::string("a rope node that is not plain");
                const graph::Tensor& f = g.tensor(n.src[2]);
                names.insert(f.kind == graph::TensorKind::Weight ? m->arch->weights()[size_t(f.weight)].name : "?");
            }
            return names.size() == 1 ? *names.begin() : std::string("several");
        };
        QCOMPARE(factorsUsed(16, 8), std::string("rope_factors_short.weight"));
        QCOMPARE(factorsUsed(17, 1), std::string("rope_factors_long.weight"));
        QCOMPARE(factorsUsed(0, 1), std::string("rope_factors_short.weight")); // 16 slots
        QCOMPARE(factorsUsed(0, 2), std::string("rope_factors_long.weight"));  // 32 slots
        const auto& w = m->arch->weights();
        const auto q = std::find_if(w.begin(), w.end(), [](const graph::Weight& x) {
            return x.name == "blk.0.attn_qkv.weight[0:8]";
        });
        QVERIFY(q != w.end());
        const auto v = std::find_if(w.begin(), w.end(), [](const graph::Weight& x) {
            return x.name == "blk.0.attn_qkv.weight[12:16]";
        });
        QVERIFY(v != w.end());
        QCOMPARE(v->data, q->data + 12 * q->rowBytes);
        QCOMPARE(v->ne[1], int64_t(4));
    }

    // mistral3: YaRN on q and k alike, the attention temperature on q only (over the original
    // context's 8 positions); a negative temperature, or one with RoPE on part of each head, is
    // refused by name.
    void mistral3TemperatureOnQOnly() {
        auto m = bind(tinySpec("mistral3"));
        QVERIFY2(m->status.isOk(), m->status.toString().c_str());
        model::KvSetup kv;
        kv.type = quant::Type::F32;
        kv.numBlocks = 2;
        const graph::Graph g = m->arch->buildGraph({4, 1, 64}, kv);
        int withTemp = 0, without = 0;
        for (const graph::Node& n : g.nodes()) {
            if (n.op != graph::Op::Rope) continue;
            QVERIFY(n.rope.extFactor == 1.0f);
            QCOMPARE(n.rope.freqScale, 0.25f);
            if (n.rope.tempScale == 0.0f) {
                ++without;
                continue;
            }
            ++withTemp;
            QCOMPARE(n.rope.tempScale, 0.1f);
            QCOMPARE(n.rope.tempLength, 8);
            QCOMPARE(g.tensor(n.out).ne[1], int64_t(2)); // the query heads
        }
        QCOMPARE(withTemp, 2);
        QCOMPARE(without, 2);

        Spec s = tinySpec("mistral3");
        s.keys["mistral3.attention.temperature_scale"] = gguf::Value::f32(-1.0f);
        auto bad = bind(s);
        QCOMPARE(int(bad->status.code()), int(ErrorCode::InvalidFormat));
        QVERIFY2(bad->status.message().find("temperature_scale") != std::string::npos, bad->status.toString().c_str());
        s = tinySpec("mistral3");
        s.keys["mistral3.rope.dimension_count"] = gguf::Value::u32(2);
        bad = bind(s);
        QCOMPARE(int(bad->status.code()), int(ErrorCode::Unsupported));
        QVERIFY2(bad->status.message().find("temperature") != std::string::npos, bad->status.toString().c_str());
    }

    // Each architecture, bound from a file of its tiny preset, has the file's reader: the CPU reads
    // embedding rows through it (qwen35 and qwen35moe had none, so a tied
    // table packed for the output projection was also read in place, 218 MiB of qwen35-2b's
    // mapping left resident).
    // synth --experts: a mixture-of-experts preset with fewer experts of the same shape loads with
    // that count; a dense preset, or fewer experts than are used per token, is a clear error.
    void synthExpertCount() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QTemporaryDir dir;
        SynthOptions o;
        o.preset = "gpt-oss-tiny"; // 8 experts, 2 per token
        o.typeOrMix = "F32";
        o.vocabPath = test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        o.outPath = dir.filePath(QStringLiteral("six.gguf")).toStdString();
        o.experts = 6;
        const Status made = synthesizeModel(o);
        QVERIFY2(made.isOk(), made.toString().c_str());
        auto file = gguf::File::open(o.outPath);
        QVERIFY2(file.isOk(), file.status().toString().c_str());
        auto arch = model::loadArchitecture(*file);
        QVERIFY2(arch.isOk(), arch.status().toString().c_str());
        const gguf::Value* count = file->find("gpt-oss.expert_count");
        QVERIFY(count && count->asInt() == 6);
        o.experts = 1;
        QVERIFY(synthesizeModel(o).code() == ErrorCode::InvalidArgument);
        o.preset = "llama-tiny";
        o.experts = 4;
        const Status dense = synthesizeModel(o);
        QVERIFY(!dense.isOk());
        QVERIFY2(dense.message().find("has no experts") != std::string::npos, dense.toString().c_str());
    }

    void everyArchitectureReadsRowsThroughTheFile() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QTemporaryDir dir;
        std::set<std::string> seen;
        for (const SynthPreset& p : synthPresets()) {
            if (p.name.size() < 5 || p.name.compare(p.name.size() - 5, 5, "-tiny") != 0) continue;
            SynthOptions o;
            o.preset = p.name;
            o.typeOrMix = "F32";
            o.vocabPath = test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
            o.outPath = dir.filePath(QString::fromStdString(p.name + ".gguf")).toStdString();
            const Status made = synthesizeModel(o);
            QVERIFY2(made.isOk(), made.toString().c_str());
            auto file = gguf::File::open(o.outPath);
            QVERIFY2(file.isOk(), file.status().toString().c_str());
            auto arch = model::loadArchitecture(*file);
            QVERIFY2(arch.isOk(), arch.status().toString().c_str());
            QVERIFY2((*arch)->reader() != nullptr, p.name.c_str());
            seen.insert((*arch)->dims().archName);
        }
        for (const std::string& a : model::supportedArchitectures())
            QVERIFY2(seen.count(a), ("no tiny preset binds " + a).c_str());
    }
};

QTEST_GUILESS_MAIN(TestModelLoad)
#include "test_model_load.moc"
