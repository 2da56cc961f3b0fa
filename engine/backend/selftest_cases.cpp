// The self-test's cases: for every op of the graph set a few small graphs (every weight type we
// dequantize for GetRows / MatMul / MatMulId, random blocks where we have no quantizer; F32, F16
// and Q8_0 K/V for KvWrite and Attention with window, softcap, sinks, GQA, several sequences and
// without the causal mask (encoders);
// every RoPE variant; odd and random shapes), with random data from the seed, and the tolerance
// each is held to.
//
// Tolerances, as max |ours - ref| / max(1, max |ref|):
//   0      GetRows of float tables, Copy, Concat (copies), TopK / ArgSort (distinct values: exact
//          indices);
//   1e-6   GetRows of quantized tables (a scale times a quant, maybe fused differently);
//   1e-5   element-wise ops, norms, softmax (float math, maybe fast exp / tanh on a GPU);
//   1e-4   RoPE at positions < 512 (GPUs compute angles in float: about p · 2^-23 radians) and
//          attention over F32 K/V; 2e-3 RoPE at positions up to 8192;
//   2e-3   attention over F16 K/V, MatMul of F16 / BF16 weights (GPUs may use half activations);
//   1e-2   attention over Q8_0 K/V (the CPU may quantize q to 8 bits for the dot products);
//   1e-4   MatMul of F32 weights; 5e-2 of quantized weights (the CPU and GPUs quantize the
//          activations to 8 bits; a wrong block or scale errs by O(1)).
// The reference keeps K/V as the device does (converted to the cache type), so attention
// tolerances cover only the arithmetic.
#include "backend/selftest_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>

namespace hearth::backend::selftest {

using graph::StepInput;
using graph::TensorId;
using quant::Type;
using Ne = std::array<int64_t, graph::kMaxDims>;

namespace {

// The fp16 scale giving values of magnitude about 1 (largest grid value times largest sub-block
// scale), and where a block keeps it: -1 for IQ1_M's scale spread over four nibbles.
struct ScaleSpot {
    int offset;
    uint16_t half;
};
ScaleSpot scaleSpot(Type t) {
    switch (t) {
    case Type::IQ2_XXS: case Type::IQ2_XS: case Type::IQ2_S: return {0, 0x2000};  // 1/128
    case Type::IQ3_XXS: case Type::IQ3_S: return {0, 0x1c00};                       // 1/256
    case Type::IQ1_S: return {0, 0x2c00};                                           // 1/16
    case Type::IQ1_M: return {-1, 0x2c00};
    case Type::TQ1_0: return {52, 0x3800};                                          // 1/2
    case Type::TQ2_0: return {64, 0x3800};
    default: return {-2, 0};
    }
}

// Weights of a type we only dequantize: random block bytes (seeded from the values) with a fixed
// scale, so every grid index, sign and sub-block scale occurs.
Status randomBlocks(Type type, const std::vector<float>& values, uint8_t* dst, uint64_t bytes) {
    const quant::TypeInfo* info = quant::typeInfo(type);
    const ScaleSpot spot = scaleSpot(type);
    if (spot.offset == -2) return unsupported(std::string("selftest: cannot make ") + std::string(info->name) + " weights");
    uint64_t state = 0x9E3779B97F4A7C15ull * (values.size() + 1);
    for (size_t i = 0; i < std::min<size_t>(values.size(), 64); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &values[i], sizeof bits);
        state = state * 31 + bits;
    }
    for (uint64_t i = 0; i < bytes; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        dst[i] = uint8_t(state >> 56);
    }
    for (uint64_t b = 0; b + info->blockBytes <= bytes; b += info->blockBytes) {
        uint8_t* block = dst + b;
        if (spot.offset >= 0) {
            block[spot.offset] = uint8_t(spot.half), block[spot.offset + 1] = uint8_t(spot.half >> 8);
        } else { // IQ1_M: the scale's nibbles are the top nibbles of the u16 words at 48, 50, 52, 54
            for (int k = 0; k < 4; ++k)
                block[49 + 2 * k] = uint8_t((block[49 + 2 * k] & 0x0f) | ((spot.half >> 4 * k) & 0x0f) << 4);
        }
    }
    return Status::ok();
}

} // namespace

void WeightTable::Aligned::operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }

Result<int32_t> WeightTable::add(const std::string& name, Type type, Ne ne, int nDims, const std::vector<float>& values) {
    HEARTH_ASSIGN_OR_RETURN(const uint64_t rowBytes, quant::rowBytes(type, uint64_t(ne[0])));
    const int64_t rows = ne[1] * ne[2] * ne[3];
    if (values.size() != size_t(ne[0] * rows)) return internalError("selftest: weight '" + name + "' has the wrong value count");
    const uint64_t bytes = std::max<uint64_t>(rowBytes * uint64_t(rows), 64);
    std::unique_ptr<uint8_t[], Aligned> data(static_cast<uint8_t*>(::operator new[](size_t(bytes), std::align_val_t(64))));
    if (quant::typeInfo(type)->canQuantize) HEARTH_RETURN_IF_ERROR(quant::quantizeRows(type, values.data(), data.get(), rows, ne[0]));
    else HEARTH_RETURN_IF_ERROR(randomBlocks(type, values, data.get(), rowBytes * uint64_t(rows)));
    graph::Weight w;
    w.name = name;
    w.type = type;
    w.ne = ne;
    w.nDims = nDims;
    w.data = data.get();
    w.rowBytes = rowBytes;
    w.layer = 0;
    m_bytes.push_back(std::move(data));
    m_list.push_back(std::move(w));
    return int32_t(m_list.size() - 1);
}

namespace {

std::string nameOf(Type t) { return std::string(quant::typeName(t)); }

// Tolerance of MatMul / MatMulId by weight type (see the file comment).
double matMulTol(Type t) {
    if (t == Type::F32) return 1e-4;
    if (t == Type::F16 || t == Type::BF16) return 2e-3;
    return 5e-2;
}

double kvTol(KvType t) { return t == KvType::F32 ? 1e-4 : t == KvType::F16 ? 2e-3 : 1e-2; }

Type kvQuant(KvType t) { return t == KvType::F32 ? Type::F32 : t == KvType::F16 ? Type::F16 : Type::Q8_0; }

struct AttnSpec {
    KvType kv = KvType::F16;
    int64_t D = 64, nHead = 4, nHeadKv = 4;
    std::vector<int64_t> seqs{17};
    int64_t queries = 0; // per sequence, its last ones; 0: all (prefill)
    int32_t window = 0;
    float softcap = 0.0f;
    bool sinks = false;
    int32_t blockSize = 16;
    float qScale = 1.0f; // q values in [-qScale, qScale] (larger: peakier softmax, softcap bites)
    bool causal = true;  // false: every query sees its whole sequence (encoders)
};

struct RopeSpec {
    int64_t D = 64, heads = 4, n = 3;
    graph::RopeParams p;
    bool factors = false;
    int32_t maxPos = 512;
    std::string variant;
};

class Builder : public CaseBuilder {
public:
    Builder(const SelftestOptions& o, WeightTable& w, std::vector<Case>& cases)
        : CaseBuilder(o.seed, w, cases), m_quick(o.quick) {}

    bool quick() const { return m_quick; }

    void getRows(Type t, int64_t width, int64_t rows, int64_t n) {
        Case& c = begin("get_rows", nameOf(t), "table" + dims({width, rows, 1, 1}) + " ids[" + std::to_string(n) + "]",
                        quant::typeInfo(t)->blockElems == 1 ? 0.0 : 1e-6);
        const TensorId table = weight(c, t, {width, rows, 1, 1}, 2, -1.0f, 1.0f);
        std::vector<int32_t> ids(static_cast<size_t>(n));
        for (int32_t& id : ids) id = int32_t(m_rng.range(0, rows - 1));
        if (n > 1) ids[0] = int32_t(rows - 1), ids[1] = 0;
        finish(c, c.graph.getRows(table, input(c, StepInput::TokenIds, ids, n)));
    }

    void matMul(Type t, int64_t cols, int64_t rows, int64_t n) {
        Case& c = begin("mat_mul", nameOf(t), "W" + dims({cols, rows, 1, 1}) + " x" + dims({cols, n, 1, 1}), matMulTol(t));
        const TensorId w = weight(c, t, {cols, rows, 1, 1}, 2, -1.0f, 1.0f);
        finish(c, c.graph.matMul(w, act(c, {cols, n, 1, 1}, -1.0f, 1.0f)));
    }

    // W [nExp][rows][cols]; x [t][1 (shared) or k][cols]; ids [t][k] distinct experts per token.
    void matMulId(Type t, int64_t cols, int64_t rows, int64_t nExp, int64_t k, int64_t tokens, bool shared) {
        const Ne xne{cols, shared ? 1 : k, tokens, 1};
        Case& c = begin("mat_mul_id", nameOf(t),
                        "W" + dims({cols, rows, nExp, 1}) + " x" + dims(xne) + " ids" + dims({k, tokens, 1, 1}), matMulTol(t));
        const TensorId w = weight(c, t, {cols, rows, nExp, 1}, 3, -1.0f, 1.0f);
        std::vector<int32_t> ids;
        for (int64_t i = 0; i < tokens; ++i) {
            std::vector<int32_t> experts(static_cast<size_t>(nExp));
            std::iota(experts.begin(), experts.end(), 0);
            m_rng.shuffle(experts);
            ids.insert(ids.end(), experts.begin(), experts.begin() + k);
        }
        const TensorId x = act(c, xne, -1.0f, 1.0f);
        finish(c, c.graph.matMulId(w, x, indices(c, {k, tokens, 1, 1}, ids)));
    }

    void rmsNorm(int64_t width, int64_t rows, bool withWeight, float eps) {
        Case& c = begin("rms_norm", "F32", "x" + dims({width, rows, 1, 1}) + (withWeight ? " w" : "") + " eps " + num(eps), 1e-5);
        const TensorId x = act(c, {width, rows, 1, 1}, -2.0f, 2.0f);
        const TensorId w = withWeight ? weight(c, Type::F32, {width, 1, 1, 1}, 1, 0.5f, 1.5f) : graph::kNone;
        finish(c, c.graph.rmsNorm(x, w, eps));
    }

    void layerNorm(int64_t width, int64_t rows, bool withWeight, bool withBias) {
        Case& c = begin("layer_norm", "F32",
                        "x" + dims({width, rows, 1, 1}) + (withWeight ? " w" : "") + (withBias ? " b" : ""), 1e-5);
        const TensorId x = act(c, {width, rows, 1, 1}, 1.0f, 5.0f); // a mean far from 0
        const TensorId w = withWeight ? weight(c, Type::F32, {width, 1, 1, 1}, 1, 0.5f, 1.5f) : graph::kNone;
        const TensorId b = withBias ? weight(c, Type::F32, {width, 1, 1, 1}, 1, -0.5f, 0.5f) : graph::kNone;
        finish(c, c.graph.layerNorm(x, w, b, 1e-5f));
    }

    void rope(const RopeSpec& s) {
        std::string shape = "x" + dims({s.D, s.heads, s.n, 1}) + " nRot " + std::to_string(s.p.nRot) + (s.p.neox ? " neox" : " normal");
        if (s.factors) shape += " freq-factors";
        if (s.p.freqScale != 1.0f) shape += " freqScale " + num(s.p.freqScale);
        if (s.p.extFactor != 0.0f) shape += " yarn attn " + num(s.p.attnFactor);
        if (s.p.tempScale != 0.0f) shape += " temperature " + num(s.p.tempScale) + "/" + std::to_string(s.p.tempLength);
        shape += " pos<" + std::to_string(s.maxPos);
        if (!s.variant.empty()) shape += " " + s.variant;
        Case& c = begin("rope", "F32", shape, s.maxPos <= 512 ? 1e-4 : 2e-3);
        const TensorId x = act(c, {s.D, s.heads, s.n, 1}, -1.0f, 1.0f);
        std::vector<int32_t> pos(static_cast<size_t>(s.n));
        for (int32_t& p : pos) p = int32_t(m_rng.range(0, s.maxPos - 1));
        const TensorId positions = input(c, StepInput::Positions, pos, s.n);
        const TensorId factors = s.factors ? weight(c, Type::F32, {s.p.nRot / 2, 1, 1, 1}, 1, 1.0f, 8.0f) : graph::kNone;
        finish(c, c.graph.rope(x, positions, factors, s.p));
    }

    // K/V rows of every token of every sequence written to its slot (blocks shuffled across the
    // pool), then attention for each sequence's last `queries` tokens (all: a prefill).
    void attention(const AttnSpec& s, const char* op = "attention") {
        const int64_t kRow = s.nHeadKv * s.D;
        std::string seqs;
        for (int64_t l : s.seqs) seqs += (seqs.empty() ? "" : ",") + std::to_string(l);
        std::string shape = "D " + std::to_string(s.D) + " heads " + std::to_string(s.nHead) + "/" + std::to_string(s.nHeadKv) +
                            " seqs " + seqs + (s.queries ? " q " + std::to_string(s.queries) + "/seq" : " prefill") + " bs " +
                            std::to_string(s.blockSize);
        if (s.window) shape += " window " + std::to_string(s.window);
        if (s.softcap > 0.0f) shape += " softcap " + num(s.softcap);
        if (s.sinks) shape += " sinks";
        if (!s.causal) shape += " non-causal";
        Case& c = begin(op, nameOf(kvQuant(s.kv)), shape, kvTol(s.kv));
        int64_t blocksNeeded = 0;
        for (int64_t l : s.seqs) blocksNeeded += (l + s.blockSize - 1) / s.blockSize;
        const int64_t numBlocks = blocksNeeded + 3;
        std::vector<int32_t> blockIds(static_cast<size_t>(numBlocks));
        std::iota(blockIds.begin(), blockIds.end(), 0);
        m_rng.shuffle(blockIds);
        std::vector<int32_t> tables, slots, info;
        size_t nextBlock = 0;
        for (int64_t l : s.seqs) {
            const int32_t offset = int32_t(tables.size());
            const int64_t blocks = (l + s.blockSize - 1) / s.blockSize;
            for (int64_t b = 0; b < blocks; ++b) tables.push_back(blockIds[nextBlock++]);
            for (int64_t p = 0; p < l; ++p)
                slots.push_back(tables[size_t(offset + p / s.blockSize)] * s.blockSize + int32_t(p % s.blockSize));
            const int64_t first = s.queries ? std::max<int64_t>(0, l - s.queries) : 0;
            for (int64_t p = first; p < l; ++p) info.insert(info.end(), {int32_t(p), offset});
        }
        const int64_t nKv = int64_t(slots.size()), nq = int64_t(info.size() / 2);
        const Type kvType = kvQuant(s.kv);
        graph::Graph& g = c.graph;
        const TensorId kc = g.kvCache(0, false, kvType, numBlocks * s.blockSize, kRow);
        const TensorId vc = g.kvCache(0, true, kvType, numBlocks * s.blockSize, kRow);
        const TensorId slotT = input(c, StepInput::KvSlots, slots, nKv);
        g.kvWrite(kc, act(c, {kRow, nKv, 1, 1}, -1.0f, 1.0f), slotT);
        g.kvWrite(vc, act(c, {kRow, nKv, 1, 1}, -1.0f, 1.0f), slotT);
        const TensorId q = act(c, {s.D, s.nHead, nq, 1}, -s.qScale, s.qScale);
        const TensorId infoT = input(c, StepInput::AttnInfo, info, 2, nq);
        const TensorId tablesT = input(c, StepInput::BlockTables, tables, int64_t(tables.size()));
        const TensorId sinks = s.sinks ? weight(c, Type::F32, {s.nHead, 1, 1, 1}, 1, -1.0f, 2.0f) : graph::kNone;
        graph::AttentionParams p;
        p.nHeadKv = int32_t(s.nHeadKv);
        p.scale = 1.0f / std::sqrt(float(s.D));
        p.window = s.window;
        p.softcap = s.softcap;
        p.blockSize = s.blockSize;
        p.causal = s.causal;
        finish(c, g.attention(q, kc, vc, infoT, tablesT, sinks, s.D, p));
        c.kv = true;
        c.kvSpec.layers = {0};
        c.kvSpec.kRow = c.kvSpec.vRow = kRow;
        c.kvSpec.headDim = int(s.D);
        c.kvSpec.type = s.kv;
        c.kvSpec.numBlocks = int(numBlocks);
        c.kvSpec.blockSize = s.blockSize;
    }

    // Add / Mul: b the same shape, one row broadcast over a's rows, or a bias weight row.
    void binary(graph::Op op, int64_t width, int64_t rows, bool broadcast, bool biasWeight) {
        Case& c = begin(graph::opName(op), "F32",
                        "a" + dims({width, rows, 1, 1}) + " b" + dims({width, broadcast ? 1 : rows, 1, 1}) + (biasWeight ? " weight" : ""), 1e-5);
        const TensorId a = act(c, {width, rows, 1, 1}, -2.0f, 2.0f);
        const TensorId b = biasWeight ? weight(c, Type::F32, {width, 1, 1, 1}, 1, -2.0f, 2.0f)
                                      : act(c, {width, broadcast ? 1 : rows, 1, 1}, -2.0f, 2.0f);
        finish(c, op == graph::Op::Add ? c.graph.add(a, b) : c.graph.mul(a, b));
    }

    // Scale, Silu, Gelu, Softmax, Softcap over inputs in [lo, hi]; param: the scale or the cap.
    void unary(graph::Op op, int64_t width, int64_t rows, float lo, float hi, float param = 1.0f) {
        std::string shape = "x" + dims({width, rows, 1, 1});
        if (op == graph::Op::Scale || op == graph::Op::Softmax) shape += " scale " + num(param);
        if (op == graph::Op::Softcap) shape += " cap " + num(param);
        Case& c = begin(graph::opName(op), "F32", shape, 1e-5);
        const TensorId x = act(c, {width, rows, 1, 1}, lo, hi);
        graph::Graph& g = c.graph;
        switch (op) {
        case graph::Op::Scale: finish(c, g.scale(x, param)); break;
        case graph::Op::Silu: finish(c, g.silu(x)); break;
        case graph::Op::Gelu: finish(c, g.gelu(x)); break;
        case graph::Op::Softmax: finish(c, g.softmax(x, param)); break;
        case graph::Op::Softcap: finish(c, g.softcap(x, param)); break;
        default: finish(c, graph::kNone); break;
        }
    }

    void glu(graph::Op op, int64_t width, int64_t rows) {
        Case& c = begin(graph::opName(op), "F32", "gate" + dims({width, rows, 1, 1}) + " up", 1e-5);
        const bool oai = op == graph::Op::SwiGluOai; // its inputs also beyond its limit of 7
        const TensorId gate = act(c, {width, rows, 1, 1}, oai ? -10.0f : -6.0f, oai ? 10.0f : 6.0f);
        const TensorId up = act(c, {width, rows, 1, 1}, oai ? -10.0f : -2.0f, oai ? 10.0f : 2.0f);
        finish(c, op == graph::Op::SwiGlu  ? c.graph.swiGlu(gate, up)
                  : op == graph::Op::GeGlu ? c.graph.geGlu(gate, up)
                                           : c.graph.swiGluOai(gate, up, 1.702f, 7.0f));
    }

    // TopK (k > 0) or ArgSort (k == 0) of rows of distinct values, or with `ties` of five values
    // each repeated (equal values come in index order, so the order is unique either way).
    void sort(int64_t width, int64_t rows, int32_t k, bool ties = false) {
        Case& c = begin(k ? "top_k" : "argsort", "F32",
                        "x" + dims({width, rows, 1, 1}) + (k ? " k " + std::to_string(k) : "") + (ties ? " ties" : ""), 0.0);
        std::vector<float> v;
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<int32_t> order(static_cast<size_t>(width));
            std::iota(order.begin(), order.end(), 0);
            m_rng.shuffle(order);
            for (int32_t o : order) v.push_back(ties ? float(o % 5) * 0.25f : float(o - width / 2) * 0.125f);
        }
        const TensorId x = values(c, {width, rows, 1, 1}, std::move(v));
        finish(c, k ? c.graph.topK(x, k) : c.graph.argSort(x));
    }

    // The values of each row at k distinct indices of it (the router's chosen experts).
    void gather(int64_t width, int64_t rows, int64_t k) {
        Case& c = begin("gather", "F32", "x" + dims({width, rows, 1, 1}) + " ids" + dims({k, rows, 1, 1}), 0.0);
        const TensorId x = act(c, {width, rows, 1, 1}, -4.0f, 4.0f);
        std::vector<int32_t> ids;
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<int32_t> order(static_cast<size_t>(width));
            std::iota(order.begin(), order.end(), 0);
            m_rng.shuffle(order);
            ids.insert(ids.end(), order.begin(), order.begin() + k);
        }
        finish(c, c.graph.gather(x, indices(c, {k, rows, 1, 1}, ids)));
    }

    // y [t][k][J] mixed per token by w [t][k].
    void weightedSum(int64_t J, int64_t k, int64_t tokens) {
        Case& c = begin("weighted_sum", "F32", "y" + dims({J, k, tokens, 1}) + " w" + dims({k, tokens, 1, 1}), 1e-5);
        const TensorId y = act(c, {J, k, tokens, 1}, -2.0f, 2.0f);
        finish(c, c.graph.weightedSum(y, act(c, {k, tokens, 1, 1}, 0.0f, 1.0f)));
    }

    void concat(Ne a, int32_t dim, int64_t bExtent) {
        Ne b = a;
        b[size_t(dim)] = bExtent;
        Case& c = begin("concat", "F32", "a" + dims(a) + " b" + dims(b) + " dim " + std::to_string(dim), 0.0);
        const TensorId ta = act(c, a, -1.0f, 1.0f);
        finish(c, c.graph.concat(ta, act(c, b, -1.0f, 1.0f), dim));
    }

    // Copy of a column slice (strided), of a row slice (an offset view), or of a reshape.
    void copy(int64_t width, int64_t rows, const char* view) {
        const std::string v = view;
        Case& c = begin("copy", "F32", "x" + dims({width, rows, 1, 1}) + " " + v, 0.0);
        const TensorId x = act(c, {width, rows, 1, 1}, -1.0f, 1.0f);
        graph::Graph& g = c.graph;
        TensorId src = graph::kNone;
        if (v == "columns") src = g.columns(x, 3, width - 5);
        else if (v == "rows") src = g.rows(x, 1, rows - 2);
        else src = g.reshape(x, width, 1, rows, 1);
        finish(c, g.copy(src));
    }

private:
    bool m_quick;
};

// The weight types to test (quantizable and dequantizable), and the ones the reference cannot make.
void weightTypes(std::vector<Type>& types, std::vector<std::string>& notQuantizable) {
    for (const quant::TypeInfo& info : quant::allTypes()) {
        const Type t = info.type;
        if (t == Type::I8 || t == Type::I16 || t == Type::I32 || t == Type::I64 || t == Type::F64) continue; // not weight types
        if (info.canDequantize && (info.canQuantize || scaleSpot(t).offset != -2)) types.push_back(t);
        else notQuantizable.push_back(std::string(info.name));
    }
}

void weightCases(Builder& b, const std::vector<Type>& types) {
    Rng& r = b.rng();
    if (b.quick()) {
        // A typical Q4_K_M / Q8_0 / F16 llama, qwen or gemma: embeddings and matrices of these types.
        for (Type t : {Type::F16, Type::Q8_0, Type::Q4_K, Type::Q6_K}) b.getRows(t, 256, 17, 5);
        for (Type t : {Type::F32, Type::F16, Type::Q4_0, Type::Q8_0, Type::Q4_K, Type::Q5_K, Type::Q6_K}) b.matMul(t, 256, 64, 1);
        for (Type t : {Type::F16, Type::Q8_0, Type::Q4_K, Type::Q6_K}) b.matMul(t, 512, 19, 7);
        return;
    }
    for (Type t : types) {
        const int64_t block = quant::typeInfo(t)->blockElems;
        // Widths: odd for plain floats, else a few blocks (the K-quants' block is 256).
        const int64_t k1 = block == 1 ? 67 : block == 32 ? 96 : 256;
        const int64_t k2 = block == 1 ? 256 : 512;
        b.getRows(t, k1, 17, 1);
        b.getRows(t, k2, 33, r.range(2, 40));
        b.matMul(t, k1, 19, 1);
        b.matMul(t, k2, 64, 3);
        b.matMul(t, k2, 40, 2); // two tokens, whole and half row groups (the CPU's 256-bit decode tiles)
        b.matMul(t, k1, 33, 17);
        b.matMul(t, k2, r.range(8, 40), r.range(2, 40));
        // Either side of the GPUs' decode/prefill boundary (their matrix-vector kernels take up to
        // 8 tokens).
        b.matMul(t, k1, 21, 8);
        b.matMul(t, k2, 23, 9);
        b.matMulId(t, k1, 19, 4, 2, 1, true);
        b.matMulId(t, k2, 24, 6, 3, 5, false);
        // Prefill: GPUs may group many tokens' pairs by expert (Vulkan above 8 tokens).
        b.matMulId(t, k1, 21, 8, 2, 17, true);
        b.matMulId(t, k1, 21, 8, 4, 12, false);
    }
}

void ropeCases(Builder& b) {
    auto spec = [](int64_t D, int64_t heads, int64_t n, int32_t nRot, bool neox) {
        RopeSpec s;
        s.D = D;
        s.heads = heads;
        s.n = n;
        s.p.nRot = nRot;
        s.p.neox = neox;
        s.p.freqBase = 10000.0f;
        return s;
    };
    if (b.quick()) {
        b.rope(spec(64, 4, 3, 64, false));
        RopeSpec s = spec(128, 2, 5, 128, true);
        s.p.freqBase = 1000000.0f; // qwen
        b.rope(s);
        return;
    }
    b.rope(spec(64, 4, 3, 64, false));
    b.rope(spec(128, 2, 17, 128, true));
    b.rope(spec(64, 3, 5, 32, false)); // partial rotation
    b.rope(spec(80, 2, 4, 32, true));  // partial, phi-like
    RopeSpec f = spec(64, 2, 3, 64, false);
    f.factors = true; // llama 3
    f.p.freqBase = 500000.0f;
    b.rope(f);
    f = spec(128, 2, 3, 128, true);
    f.factors = true;
    b.rope(f);
    RopeSpec lin = spec(64, 2, 5, 64, false);
    lin.p.freqScale = 0.25f;
    b.rope(lin);
    RopeSpec yarn = spec(64, 2, 5, 64, true);
    yarn.p.freqScale = 0.25f;
    yarn.p.extFactor = 1.0f;
    yarn.p.nCtxOrig = 4096;
    b.rope(yarn);
    yarn = spec(128, 2, 3, 128, false);
    yarn.p.freqScale = 0.125f;
    yarn.p.extFactor = 1.0f;
    yarn.p.attnFactor = 1.2f;
    yarn.p.nCtxOrig = 2048;
    yarn.p.freqBase = 1000000.0f;
    b.rope(yarn);
    RopeSpec temp = spec(64, 3, 9, 64, false); // mistral3's attention temperature
    temp.p.tempScale = 0.1f;
    temp.p.tempLength = 64;
    b.rope(temp);
    temp = yarn; // with YaRN, as mistral3 files have both
    temp.p.tempScale = 0.25f;
    temp.p.tempLength = 100;
    b.rope(temp);
    RopeSpec far = spec(128, 2, 7, 128, false);
    far.maxPos = 8192;
    b.rope(far);
    Rng& r = b.rng();
    const int64_t D = 2 * r.range(4, 64);
    RopeSpec any = spec(D, r.range(1, 6), r.range(1, 20), int32_t(2 * r.range(1, D / 2)), r.range(0, 1) == 1);
    any.variant = "(random)";
    b.rope(any);
}

void attentionCases(Builder& b) {
    auto spec = [](KvType kv, int64_t D, int64_t h, int64_t hkv, std::vector<int64_t> seqs, int64_t queries) {
        AttnSpec s;
        s.kv = kv;
        s.D = D;
        s.nHead = h;
        s.nHeadKv = hkv;
        s.seqs = std::move(seqs);
        s.queries = queries;
        return s;
    };
    if (b.quick()) {
        b.attention(spec(KvType::F16, 64, 2, 2, {1, 3}, 0), "kv_write");
        b.attention(spec(KvType::F16, 64, 8, 2, {20, 35}, 1)); // GQA decode, two sequences
        AttnSpec g = spec(KvType::F16, 128, 4, 2, {26}, 0);    // gemma: window and softcap
        g.window = 16;
        g.softcap = 10.0f;
        g.qScale = 4.0f;
        b.attention(g);
        b.attention(spec(KvType::Q8_0, 64, 8, 2, {20, 35}, 1));
        AttnSpec enc = spec(KvType::F32, 64, 4, 4, {19, 5}, 0); // an encoder's two inputs
        enc.causal = false;
        enc.qScale = 4.0f;
        b.attention(enc);
        return;
    }
    Rng& r = b.rng();
    for (KvType kv : {KvType::F32, KvType::F16, KvType::Q8_0}) {
        b.attention(spec(kv, 64, 2, 2, {1, 3, 17}, 0), "kv_write");
        b.attention(spec(kv, 64, 4, 4, {17}, 0));
        b.attention(spec(kv, 128, 8, 2, {20, 35, 1}, 1));
        AttnSpec w = spec(kv, 64, 4, 1, {40}, 5);
        w.window = 8;
        b.attention(w);
        AttnSpec sc = spec(kv, 64, 2, 2, {9, 23}, 0);
        sc.softcap = 5.0f;
        sc.qScale = 4.0f;
        b.attention(sc);
        AttnSpec sk = spec(kv, 64, 4, 2, {30}, 3);
        sk.sinks = true;
        b.attention(sk);
        AttnSpec g = spec(kv, 128, 4, 2, {26}, 0);
        g.window = 16;
        g.softcap = 10.0f;
        g.qScale = 4.0f;
        b.attention(g);
        AttnSpec bs = spec(kv, 64, 2, 1, {50, 7}, 0);
        bs.blockSize = 32;
        b.attention(bs);
        const int64_t hkv = r.range(1, 4);
        AttnSpec any = spec(kv, r.range(0, 1) ? 128 : 64, hkv * r.range(1, 4), hkv, {r.range(1, 60), r.range(1, 60)}, r.range(0, 3));
        b.attention(any);
        // Encoders: each token over its whole sequence (two inputs, GQA, blocks of 16 and 32).
        AttnSpec enc = spec(kv, 64, 4, 2, {37, 3}, 0);
        enc.causal = false;
        enc.qScale = 4.0f;
        b.attention(enc);
        AttnSpec enc32 = spec(kv, 128, 2, 2, {70}, 0);
        enc32.causal = false;
        enc32.blockSize = 32;
        b.attention(enc32);
        // An image's tokens after a prompt, seen at once, in a sliding-window layer: each reaches
        // the image's end, its window counted back from its own position.
        AttnSpec image = spec(kv, 64, 4, 2, {40}, 12);
        image.causal = false;
        image.window = 8;
        b.attention(image);
    }
}

void elementCases(Builder& b) {
    using graph::Op;
    if (b.quick()) {
        b.rmsNorm(256, 3, true, 1e-6f);
        b.binary(Op::Add, 256, 3, false, false);  // the residual
        b.binary(Op::Add, 256, 3, true, true);    // a bias
        b.binary(Op::Mul, 256, 3, true, true);
        b.unary(Op::Scale, 256, 3, -2.0f, 2.0f, 0.125f);
        b.unary(Op::Silu, 256, 3, -8.0f, 8.0f);
        b.unary(Op::Gelu, 256, 3, -8.0f, 8.0f);
        b.unary(Op::Softcap, 256, 3, -120.0f, 120.0f, 30.0f);
        b.glu(Op::SwiGlu, 256, 3);
        b.glu(Op::GeGlu, 256, 3);
        return;
    }
    Rng& r = b.rng();
    auto oddWidth = [&] { return 2 * r.range(50, 1500) + 1; };
    for (bool w : {false, true}) b.rmsNorm(1, 3, w, 1e-5f);
    b.rmsNorm(17, 1, false, 1e-6f);
    b.rmsNorm(256, 17, true, 1e-6f);
    b.rmsNorm(4097, 2, true, 1e-5f);
    b.rmsNorm(oddWidth(), r.range(1, 8), true, 1e-6f);
    b.layerNorm(17, 3, true, true);
    b.layerNorm(256, 5, true, false);
    b.layerNorm(1000, 2, false, false);
    b.layerNorm(oddWidth(), r.range(1, 8), true, true);
    for (Op op : {Op::Add, Op::Mul}) {
        b.binary(op, 1, 3, false, false);
        b.binary(op, 17, 1, false, false);
        b.binary(op, 256, 17, false, false);
        b.binary(op, 17, 3, true, false);
        b.binary(op, 256, 5, true, true);
        b.binary(op, oddWidth(), r.range(1, 8), r.range(0, 1) == 1, false);
    }
    auto shapes = [&](auto&& f) {
        f(1, 3);
        f(17, 1);
        f(256, 17);
        f(oddWidth(), r.range(1, 8));
    };
    shapes([&](int64_t w, int64_t n) { b.unary(Op::Scale, w, n, -2.0f, 2.0f, -3.0f); });
    shapes([&](int64_t w, int64_t n) { b.unary(Op::Silu, w, n, -8.0f, 8.0f); });
    shapes([&](int64_t w, int64_t n) { b.unary(Op::Gelu, w, n, -8.0f, 8.0f); });
    shapes([&](int64_t w, int64_t n) { b.glu(Op::SwiGlu, w, n); });
    shapes([&](int64_t w, int64_t n) { b.glu(Op::GeGlu, w, n); });
    shapes([&](int64_t w, int64_t n) { b.glu(Op::SwiGluOai, w, n); });
    shapes([&](int64_t w, int64_t n) { b.unary(Op::Softmax, w, n, -10.0f, 10.0f, w == 17 ? 0.5f : 1.0f); });
    shapes([&](int64_t w, int64_t n) { b.unary(Op::Softcap, w, n, -120.0f, 120.0f, 30.0f); });
    b.sort(17, 3, 1);
    b.sort(17, 1, 5);
    b.sort(256, 3, 8);
    b.sort(1000, 2, 40);
    b.sort(1, 3, 0);
    b.sort(8, 2, 0);
    b.sort(17, 3, 0);
    b.sort(300, 2, 0);
    b.sort(37, 5, 4, true);
    b.sort(23, 2, 0, true);
    b.gather(8, 1, 2);
    b.gather(128, 5, 8);
    b.gather(32, 17, 4);
    b.weightedSum(17, 1, 3);
    b.weightedSum(256, 8, 1);
    b.weightedSum(oddWidth(), 4, r.range(2, 20));
    b.concat({5, 3, 2, 1}, 0, 7);
    b.concat({5, 3, 2, 1}, 1, 1);
    b.concat({5, 3, 2, 2}, 2, 3);
    b.concat({4, 3, 2, 1}, 3, 2);
    b.copy(17, 5, "columns");
    b.copy(17, 5, "rows");
    b.copy(33, 6, "reshape");
}

} // namespace

Status buildCases(const SelftestOptions& options, WeightTable& weights, std::vector<Case>& cases,
                  std::vector<std::string>& notQuantizable) {
    std::vector<Type> types;
    weightTypes(types, notQuantizable);
    Builder b(options, weights, cases);
    weightCases(b, types);
    elementCases(b);
    ropeCases(b);
    attentionCases(b);
    HEARTH_RETURN_IF_ERROR(b.status());
    return recurrentCases(options, weights, cases);
}

} // namespace hearth::backend::selftest
