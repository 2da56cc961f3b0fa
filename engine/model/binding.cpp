// Hyper-parameter reads, tensor binding, and the decoder pieces architectures share.
#include "model/binding.h"

#include <cmath>

namespace hearth::model {

using graph::TensorId;

Result<int> Binder::integer(const std::string& key, std::optional<int> fallback) const {
    const std::string full = m_arch + "." + key;
    if (!m_file.has(full)) {
        if (fallback) return *fallback;
        return notFound("missing key '" + full + "'");
    }
    HEARTH_ASSIGN_OR_RETURN(uint32_t v, m_file.getU32(full));
    if (v > (1u << 30)) return outOfRange("key '" + full + "' is implausibly large");
    return int(v);
}

Result<float> Binder::real(const std::string& key, std::optional<float> fallback) const {
    const std::string full = m_arch + "." + key;
    if (!m_file.has(full)) {
        if (fallback) return *fallback;
        return notFound("missing key '" + full + "'");
    }
    HEARTH_ASSIGN_OR_RETURN(float v, m_file.getF32(full));
    if (!std::isfinite(v)) return invalidFormat("key '" + full + "' is not a finite number");
    return v;
}

Result<int> Binder::layerCount() const {
    HEARTH_ASSIGN_OR_RETURN(const int n, integer("block_count"));
    if (n < 1 || n > 4096) return invalidFormat(m_arch + ".block_count " + std::to_string(n) + " is outside 1..4096");
    return n;
}

Result<std::vector<int>> Binder::counts(const std::string& key, std::optional<int> fallback) const {
    HEARTH_ASSIGN_OR_RETURN(const int n, layerCount());
    const std::string full = m_arch + "." + key;
    if (!m_file.has(full)) {
        if (fallback) return std::vector<int>(size_t(n), *fallback);
        return notFound("missing key '" + full + "'");
    }
    HEARTH_ASSIGN_OR_RETURN(const std::vector<uint64_t> values, m_file.getCounts(full, size_t(n), 1u << 30));
    return std::vector<int>(values.begin(), values.end());
}

Result<int> Binder::sameCount(const std::string& key, std::optional<int> fallback) const {
    HEARTH_ASSIGN_OR_RETURN(const std::vector<int> values, counts(key, fallback));
    for (size_t l = 1; l < values.size(); ++l)
        if (values[l] != values[0])
            return unsupported(m_arch + "." + key + " differs between layers (" + std::to_string(values[0]) + " on layer 0, " +
                               std::to_string(values[l]) + " on layer " + std::to_string(l) + "); " + m_arch +
                               " is computed with one value for every layer");
    return values[0];
}

Result<std::vector<bool>> Binder::flags(const std::string& key) const {
    HEARTH_ASSIGN_OR_RETURN(const int n, layerCount());
    return m_file.getFlags(m_arch + "." + key, size_t(n));
}

Result<int32_t> Binder::matrix(const std::string& name, int64_t cols, int64_t rows, int32_t layer) {
    return tensor(name, {cols, rows, 1, 1}, 2, layer);
}

Result<int32_t> Binder::experts(const std::string& name, int64_t cols, int64_t rows, int64_t nExp, int32_t layer) {
    return tensor(name, {cols, rows, nExp, 1}, 3, layer);
}

Result<int32_t> Binder::tensor(const std::string& name, std::array<int64_t, 4> ne, int nDims, int32_t layer) {
    const gguf::TensorInfo* t = m_file.findTensor(name);
    if (!t) return notFound("missing tensor '" + name + "'");
    bool same = t->nDims == uint32_t(nDims);
    for (int d = 0; same && d < nDims; ++d) same = int64_t(t->ne[size_t(d)]) == ne[size_t(d)];
    if (!same) {
        std::string want = "[";
        for (int d = 0; d < nDims; ++d) want += (d ? ", " : "") + std::to_string(ne[size_t(d)]);
        return invalidFormat("tensor '" + name + "' has shape " + t->shapeString() + ", expected " + want + "]");
    }
    const quant::TypeInfo* info = quant::typeInfo(t->type);
    if (!info || !info->canDequantize)
        return unsupported("tensor '" + name + "' has type " + std::string(quant::typeName(t->type)) +
                           ", which this build cannot compute with");
    graph::Weight w;
    w.name = name;
    w.type = t->type;
    w.ne = ne;
    w.nDims = nDims;
    w.data = m_file.tensorData(*t);
    HEARTH_ASSIGN_OR_RETURN(w.rowBytes, quant::rowBytes(t->type, uint64_t(ne[0])));
    w.layer = layer;
    if (!w.data) return invalidFormat("tensor '" + name + "' has no data");
    m_weights.push_back(std::move(w));
    return int32_t(m_weights.size() - 1);
}

Result<std::vector<int32_t>> Binder::matrixParts(const std::string& name, int64_t cols,
                                                 const std::vector<int64_t>& rows, int32_t layer) {
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    HEARTH_ASSIGN_OR_RETURN(const int32_t whole, tensor(name, {cols, total, 1, 1}, 2, layer));
    const graph::Weight all = m_weights[size_t(whole)];
    m_weights.pop_back();
    std::vector<int32_t> out;
    int64_t first = 0;
    for (int64_t r : rows) {
        graph::Weight w = all;
        w.name = name + "[" + std::to_string(first) + ":" + std::to_string(first + r) + "]";
        w.ne = {cols, r, 1, 1};
        w.data = all.data + uint64_t(first) * all.rowBytes;
        m_weights.push_back(std::move(w));
        out.push_back(int32_t(m_weights.size() - 1));
        first += r;
    }
    return out;
}

Result<int32_t> Binder::matrixRows(const std::string& name, int64_t cols, int64_t rows, int64_t keep,
                                   int32_t layer) {
    if (keep < 1 || keep > rows)
        return invalidArgument("tensor '" + name + "': " + std::to_string(keep) + " of its " + std::to_string(rows) +
                               " rows");
    if (keep == rows) return matrix(name, cols, rows, layer);
    HEARTH_ASSIGN_OR_RETURN(const std::vector<int32_t> parts, matrixParts(name, cols, {keep, rows - keep}, layer));
    m_weights.pop_back(); // the rows not kept
    return parts[0];
}

Result<int32_t> Binder::vector(const std::string& name, int64_t n, int32_t layer) {
    const gguf::TensorInfo* t = m_file.findTensor(name);
    if (!t) return notFound("missing tensor '" + name + "'");
    if (t->type != quant::Type::F32 || t->elements() != uint64_t(n))
        return invalidFormat("tensor '" + name + "' must be F32 with " + std::to_string(n) + " elements (it is " +
                             std::string(quant::typeName(t->type)) + " " + t->shapeString() + ")");
    const uint8_t* p = m_file.tensorData(*t);
    if (!p) return invalidFormat("tensor '" + name + "' has no data");
    if (reinterpret_cast<uintptr_t>(p) % alignof(float) != 0)
        return invalidFormat("tensor '" + name + "' is not aligned");
    const float* values = reinterpret_cast<const float*>(p);
    return ownVector(name, std::vector<float>(values, values + n), layer);
}

int32_t Binder::ownVector(const std::string& name, std::vector<float> values, int32_t layer) {
    m_copies.push_back(std::move(values));
    graph::Weight w;
    w.name = name;
    w.type = quant::Type::F32;
    w.ne = {int64_t(m_copies.back().size()), 1, 1, 1};
    w.nDims = 1;
    w.data = reinterpret_cast<const uint8_t*>(m_copies.back().data());
    w.rowBytes = uint64_t(w.ne[0]) * 4;
    w.layer = layer;
    m_weights.push_back(std::move(w));
    return int32_t(m_weights.size() - 1);
}

Result<int32_t> Binder::reshapedMatrix(const std::string& name, std::array<int64_t, 4> fileNe, int nDims,
                                       int64_t cols, int64_t rows, int32_t layer) {
    if (cols < 1 || rows < 1 || cols % fileNe[0] != 0 || cols * rows != fileNe[0] * fileNe[1] * fileNe[2] * fileNe[3])
        return invalidArgument("tensor '" + name + "' cannot be read as a matrix of " + std::to_string(rows) +
                               " rows of " + std::to_string(cols));
    HEARTH_ASSIGN_OR_RETURN(const int32_t index, tensor(name, fileNe, nDims, layer));
    graph::Weight& w = m_weights[size_t(index)];
    HEARTH_ASSIGN_OR_RETURN(w.rowBytes, quant::rowBytes(w.type, uint64_t(cols)));
    w.ne = {cols, rows, 1, 1};
    w.nDims = 2;
    return index;
}

Result<int32_t> Binder::transposedMatrix(const std::string& name, int64_t a, int64_t b, int32_t layer) {
    HEARTH_ASSIGN_OR_RETURN(const int32_t index, tensor(name, {a, b, 1, 1}, 2, layer));
    const graph::Weight src = m_weights[size_t(index)];
    m_weights.pop_back();
    // The file's rows are b rows of a values; the copy's rows are a rows of b values.
    std::vector<float> row(static_cast<size_t>(a)), t(static_cast<size_t>(a * b));
    for (int64_t r = 0; r < b; ++r) {
        HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(src.type, src.data + uint64_t(r) * src.rowBytes, row.data(), a));
        for (int64_t c = 0; c < a; ++c) t[size_t(c * b + r)] = row[size_t(c)];
    }
    m_copies.push_back(std::move(t));
    graph::Weight w;
    w.name = name + " (transposed)";
    w.type = quant::Type::F32;
    w.ne = {b, a, 1, 1};
    w.nDims = 2;
    w.data = reinterpret_cast<const uint8_t*>(m_copies.back().data());
    w.rowBytes = uint64_t(b) * 4;
    w.layer = layer;
    m_weights.push_back(std::move(w));
    return int32_t(m_weights.size() - 1);
}

Result<int32_t> Binder::f32Matrix(const std::string& name, int64_t cols, int64_t rows, int32_t layer) {
    HEARTH_ASSIGN_OR_RETURN(const int32_t index, matrix(name, cols, rows, layer));
    graph::Weight& w = m_weights[size_t(index)];
    if (w.type == quant::Type::F32) return index;
    std::vector<float> values(size_t(cols * rows));
    for (int64_t r = 0; r < rows; ++r)
        HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(w.type, w.data + uint64_t(r) * w.rowBytes, values.data() + r * cols, cols));
    m_copies.push_back(std::move(values));
    w.type = quant::Type::F32;
    w.data = reinterpret_cast<const uint8_t*>(m_copies.back().data());
    w.rowBytes = uint64_t(cols) * 4;
    return index;
}

Result<int32_t> Binder::optionalVector(const std::string& name, int64_t n, int32_t layer) {
    if (!hasTensor(name)) return -1;
    return vector(name, n, layer);
}

Result<DecoderHParams> readDecoderHParams(const Binder& b, bool feedForward, std::vector<bool>* withoutKv) {
    DecoderHParams hp;
    HEARTH_ASSIGN_OR_RETURN(hp.nLayer, b.layerCount());
    HEARTH_ASSIGN_OR_RETURN(hp.nEmbd, b.integer("embedding_length"));
    if (feedForward) {
        HEARTH_ASSIGN_OR_RETURN(hp.nFf, b.sameCount("feed_forward_length"));
    } else {
        HEARTH_ASSIGN_OR_RETURN(hp.nFf, b.sameCount("feed_forward_length", 1));
    }
    HEARTH_ASSIGN_OR_RETURN(hp.nHead, b.sameCount("attention.head_count"));
    if (withoutKv) {
        HEARTH_ASSIGN_OR_RETURN(const std::vector<int> kv, b.counts("attention.head_count_kv", hp.nHead));
        withoutKv->assign(kv.size(), false);
        for (size_t l = 0; l < kv.size(); ++l) {
            (*withoutKv)[l] = kv[l] == 0;
            if (kv[l] == 0) continue;
            if (hp.nHeadKv != 0 && kv[l] != hp.nHeadKv)
                return unsupported(b.arch() + ".attention.head_count_kv differs between attention layers");
            hp.nHeadKv = kv[l];
        }
        if (hp.nHeadKv == 0) return invalidFormat(b.arch() + ".attention.head_count_kv is 0 on every layer");
    } else {
        HEARTH_ASSIGN_OR_RETURN(hp.nHeadKv, b.sameCount("attention.head_count_kv", hp.nHead));
    }
    HEARTH_ASSIGN_OR_RETURN(hp.nCtxTrain, b.integer("context_length", 2048));
    if (hp.nEmbd < 1 || hp.nFf < 1) return invalidFormat("embedding/feed-forward length is zero");
    if (hp.nHead < 1 || hp.nHeadKv < 1 || hp.nHead % hp.nHeadKv != 0)
        return invalidFormat("head_count " + std::to_string(hp.nHead) + " is not a positive multiple of head_count_kv " +
                             std::to_string(hp.nHeadKv));
    HEARTH_ASSIGN_OR_RETURN(hp.headDim, b.integer("attention.key_length", hp.nEmbd / hp.nHead));
    HEARTH_ASSIGN_OR_RETURN(hp.headDimV, b.integer("attention.value_length", hp.headDim));
    if (hp.headDim < 2 || hp.headDim % 2 != 0 || hp.headDimV < 1 || hp.headDim > 1024 || hp.headDimV > 1024)
        return unsupported("head dimension " + std::to_string(hp.headDim) + " / value length " +
                           std::to_string(hp.headDimV) + " is not supported");
    HEARTH_ASSIGN_OR_RETURN(hp.nRot, b.integer("rope.dimension_count", hp.headDim));
    if (hp.nRot < 2 || hp.nRot > hp.headDim || hp.nRot % 2 != 0)
        return invalidFormat("rope.dimension_count " + std::to_string(hp.nRot) + " is invalid");
    HEARTH_ASSIGN_OR_RETURN(hp.ropeBase, b.real("rope.freq_base", 10000.0f));
    HEARTH_ASSIGN_OR_RETURN(hp.normEps, b.real("attention.layer_norm_rms_epsilon", 1e-5f));
    if (!(hp.ropeBase > 0.0f) || !(hp.normEps > 0.0f))
        return invalidFormat("rope.freq_base and layer_norm_rms_epsilon must be positive");
    const gguf::TensorInfo* emb = b.file().findTensor("token_embd.weight");
    if (!emb) return notFound("missing tensor 'token_embd.weight'");
    if (emb->nDims != 2 || emb->ne[1] > (1u << 30)) return invalidFormat("token_embd.weight must be 2-D");
    hp.nVocab = int(emb->ne[1]);
    return hp;
}

Result<std::vector<bool>> readSlidingLayers(const Binder& b, int nLayer, int window, int defaultEvery) {
    std::vector<bool> sliding(size_t(nLayer), false);
    if (window <= 0) return sliding;
    const std::string key = b.arch() + ".attention.sliding_window_pattern";
    const gguf::Value* pattern = b.file().find(key);
    if (pattern && pattern->isArray()) return b.file().getFlags(key, size_t(nLayer));
    HEARTH_ASSIGN_OR_RETURN(const int every, b.integer("attention.sliding_window_pattern", defaultEvery));
    for (int l = 0; l < nLayer; ++l) sliding[size_t(l)] = every == 0 || l % every < every - 1;
    return sliding;
}

Result<ClsOutput> bindClsOutput(Binder& b, const gguf::TensorInfo& weight, int64_t E, int32_t layer) {
    ClsOutput out;
    const int64_t outputs = int64_t(weight.ne[1]);
    if (weight.nDims != 2 || outputs < 1 || outputs > E) return invalidFormat("cls.output.weight has a bad shape");
    HEARTH_ASSIGN_OR_RETURN(out.weight, b.matrix("cls.output.weight", E, outputs, layer));
    HEARTH_ASSIGN_OR_RETURN(out.bias, b.optionalVector("cls.output.bias", outputs, layer));
    out.outputs = int(outputs);
    return out;
}

Result<graph::RopeParams> readRopeScaling(const Binder& b, const DecoderHParams& hp, graph::RopeParams p) {
    std::string type = "linear";
    if (b.file().has(b.arch() + ".rope.scaling.type")) {
        HEARTH_ASSIGN_OR_RETURN(type, b.file().getString(b.arch() + ".rope.scaling.type"));
    }
    float factor = 0.0f;
    if (b.has("rope.scaling.factor")) {
        HEARTH_ASSIGN_OR_RETURN(factor, b.real("rope.scaling.factor"));
    } else if (b.has("rope.scale_linear")) {
        HEARTH_ASSIGN_OR_RETURN(factor, b.real("rope.scale_linear"));
    }
    if (factor < 0.0f) return invalidFormat(b.arch() + ".rope.scaling.factor must not be negative");
    HEARTH_ASSIGN_OR_RETURN(const float attnFactor, b.real("rope.scaling.attn_factor", 1.0f));
    HEARTH_ASSIGN_OR_RETURN(p.nCtxOrig, b.integer("rope.scaling.original_context_length", hp.nCtxTrain));
    if (type == "none") return p;
    if (type != "linear" && type != "yarn") return unsupported("RoPE scaling '" + type + "'");
    p.freqScale = factor == 0.0f ? 1.0f : 1.0f / factor;
    p.attnFactor = attnFactor;
    if (type == "yarn") {
        // llama.cpp's defaults: extrapolation mixed in fully, the ramp over [1, 32] rotations, and
        // the magnitude YaRN adds (1 + 0.1 ln factor) left as the kernel applies it.
        p.extFactor = 1.0f;
        HEARTH_ASSIGN_OR_RETURN(p.betaFast, b.real("rope.scaling.yarn_beta_fast", 32.0f));
        HEARTH_ASSIGN_OR_RETURN(p.betaSlow, b.real("rope.scaling.yarn_beta_slow", 1.0f));
        HEARTH_ASSIGN_OR_RETURN(const float logMul, b.real("rope.scaling.yarn_log_multiplier", 0.0f));
        // The magnitude llama.cpp hands the kernel, which multiplies it by 1 + 0.1 ln factor.
        const double f = factor == 0.0f ? 1.0 : double(factor);
        auto mscale = [&](double m) { return f <= 1.0 ? 1.0 : 0.1 * m * std::log(f) + 1.0; };
        double a = logMul != 0.0f ? mscale(1.0) / mscale(double(logMul)) : mscale(1.0);
        a /= 1.0 + 0.1 * std::log(f);
        p.attnFactor = float(a * double(attnFactor));
    }
    return p;
}

ModelDims decoderDims(const std::string& arch, const DecoderHParams& hp) {
    ModelDims d;
    d.archName = arch;
    d.nLayer = hp.nLayer;
    d.nEmbd = hp.nEmbd;
    d.nVocab = hp.nVocab;
    d.nCtxTrain = hp.nCtxTrain;
    d.kv.assign(size_t(hp.nLayer), LayerKv{hp.nHeadKv, hp.headDim, hp.headDimV});
    return d;
}

StepTensors stepTensors(graph::Graph& g, const graph::StepShape& shape) {
    using graph::StepInput;
    StepTensors in;
    in.n = shape.tokens;
    in.ids = g.input(StepInput::TokenIds, shape.tokens);
    in.positions = g.input(StepInput::Positions, shape.tokens);
    in.slots = g.input(StepInput::KvSlots, shape.tokens);
    in.info = g.input(StepInput::AttnInfo, 2, shape.tokens);
    in.tables = g.input(StepInput::BlockTables, shape.tableLen);
    if (shape.wanted > 0) in.wanted = g.input(StepInput::WantedRows, shape.wanted);
    if (shape.hidden > 0) in.hidden = g.input(StepInput::HiddenRows, shape.hidden);
    in.embeds = shape.embeds;
    in.withinSequence = shape.withinSequence;
    return in;
}

graph::TensorId withGivenEmbeddings(graph::Graph& g, const StepTensors& in, graph::TensorId x) {
    if (in.embeds <= 0 || x == graph::kNone) return x;
    const int64_t E = g.tensor(x).ne[0];
    const graph::TensorId given = g.input(graph::StepInput::EmbedRows, E, in.embeds, quant::Type::F32); // [m][E]
    const graph::TensorId index = g.input(graph::StepInput::EmbedIndex, in.n);
    // [n + m][E]: the tokens' rows, then the given ones; each token picks its row.
    return g.getRows(g.concat(x, given, 1), index);
}

AttentionSpec attentionSpec(const DecoderHParams& hp) {
    AttentionSpec spec;
    spec.nHead = hp.nHead;
    spec.nHeadKv = hp.nHeadKv;
    spec.headDim = hp.headDim;
    spec.headDimV = hp.headDimV;
    spec.rope.nRot = hp.nRot;
    spec.rope.freqBase = hp.ropeBase;
    spec.normEps = hp.normEps;
    spec.scale = 1.0f / std::sqrt(float(hp.headDim));
    return spec;
}

TensorId selfAttention(graph::Graph& g, const StepTensors& in, const KvSetup& kv, int layer, TensorId x,
                       const AttentionWeights& w, const AttentionSpec& s) {
    const int64_t n = in.n, D = s.headDim, Dv = s.headDimV > 0 ? s.headDimV : s.headDim;
    auto opt = [&](int32_t index) { return index >= 0 ? g.weight(index) : graph::kNone; };
    const bool own = s.kvLayer < 0; // computes and caches its own K/V
    // q [n][nHead * D]; k [n][nHeadKv * D]; v [n][nHeadKv * Dv]
    TensorId q = g.matMul(g.weight(w.wq), x), k = graph::kNone, v = graph::kNone, gate = graph::kNone;
    if (s.qGate) { // [n][nHead][2D] -> q [n][nHead·D] and gate [n][nHead·D]
        const TensorId both = g.reshape(q, 2 * D, int64_t(s.nHead) * n);
        gate = g.reshape(g.copy(g.columns(both, D, D)), int64_t(s.nHead) * D, n);
        q = g.reshape(g.copy(g.columns(both, 0, D)), int64_t(s.nHead) * D, n);
    }
    if (own) {
        k = g.matMul(g.weight(w.wk), x);
        v = w.wv >= 0 ? g.matMul(g.weight(w.wv), x) : k;
    }
    if (w.bq >= 0) q = g.add(q, g.weight(w.bq));
    if (own && w.bk >= 0) k = g.add(k, g.weight(w.bk));
    if (own && w.bv >= 0) v = g.add(v, g.weight(w.bv));
    q = g.reshape(q, D, s.nHead, n); // [n][nHead][D]
    if (own) k = g.reshape(k, D, s.nHeadKv, n);
    if (w.qNorm >= 0) q = g.rmsNorm(q, g.weight(w.qNorm), s.normEps);
    if (own && w.kNorm >= 0) k = g.rmsNorm(k, g.weight(w.kNorm), s.normEps);
    if (own && s.vNorm)
        v = g.reshape(g.rmsNorm(g.reshape(v, Dv, s.nHeadKv, n), graph::kNone, s.normEps), int64_t(s.nHeadKv) * Dv, n);
    // M-RoPE with an image's tokens: three rotations, each of its section's pairs by its
    // position (the others' factors +inf leave them as they are).
    auto rotate = [&](TensorId t, const graph::RopeParams& p) {
        if (in.ropeH == graph::kNone)
            return g.rope(t, in.ropeT != graph::kNone ? in.ropeT : in.positions, opt(w.ropeFactors), p);
        t = g.rope(t, in.ropeT, opt(w.mropeFactors[0]), p);
        t = g.rope(t, in.ropeH, opt(w.mropeFactors[1]), p);
        return g.rope(t, in.ropeW, opt(w.mropeFactors[2]), p);
    };
    if (s.rotate) q = rotate(q, s.rope);
    if (own && s.rotate) {
        graph::RopeParams kRope = s.rope;
        kRope.tempScale = 0.0f; // the attention temperature scales q only
        kRope.tempLength = 0;
        k = rotate(k, kRope);
    }
    if (w.qMagnitude >= 0) q = g.mul(q, g.weight(w.qMagnitude));
    const int cacheLayer = own ? layer : s.kvLayer;
    const TensorId kCache = g.kvCache(cacheLayer, false, kv.type, kv.slots(), int64_t(s.nHeadKv) * D);
    const TensorId vCache = g.kvCache(cacheLayer, true, kv.type, kv.slots(), int64_t(s.nHeadKv) * Dv);
    if (own) {
        g.kvWrite(kCache, k, in.slots);
        g.kvWrite(vCache, v, in.slots);
    }
    graph::AttentionParams ap;
    ap.nHeadKv = s.nHeadKv;
    ap.scale = s.scale;
    ap.window = s.window;
    ap.softcap = s.softcap;
    ap.blockSize = kv.blockSize;
    ap.causal = s.causal && !in.withinSequence;
    TensorId att = g.attention(q, kCache, vCache, in.info, in.tables, opt(w.sinks), Dv, ap); // [n][nHead][Dv]
    att = g.reshape(att, int64_t(s.nHead) * Dv, n);
    if (gate != graph::kNone) att = g.mul(att, g.sigmoid(gate));
    const TensorId out = g.matMul(g.weight(w.wo), att); // [n][E]
    return w.bo >= 0 ? g.add(out, g.weight(w.bo)) : out;
}

void logitsHead(graph::Graph& g, const StepTensors& in, TensorId x, int32_t norm, int32_t output, float eps,
                float cap) {
    if (in.hidden != graph::kNone) {
        const TensorId h = g.getRows(x, in.hidden); // [h][E]
        g.setHiddenOutput(g.rmsNorm(h, g.weight(norm), eps));
    }
    if (in.wanted == graph::kNone) return;
    TensorId rows = g.getRows(x, in.wanted);     // [w][E]
    rows = g.rmsNorm(rows, g.weight(norm), eps);
    TensorId logits = g.matMul(g.weight(output), rows); // [w][vocab]
    if (cap > 0.0f) logits = g.softcap(logits, cap);
    g.setOutput(logits);
}

} // namespace hearth::model
