// Named quantization mixes (Q4_K_M, Q5_K_S, ...) and the per-tensor type rules behind them, for
// llama-family models: which tensors get more bits, and fallbacks for rows that blocks can't tile.
#include "hearth/quant.h"

#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace hearth::quant {

namespace {

constexpr Mix kMixes[] = {
    {"F32", Type::F32, 0},     {"F16", Type::F16, 1},       {"BF16", Type::BF16, 32},
    {"Q4_0", Type::Q4_0, 2},   {"Q4_1", Type::Q4_1, 3},     {"Q8_0", Type::Q8_0, 7},
    {"Q5_0", Type::Q5_0, 8},   {"Q5_1", Type::Q5_1, 9},     {"Q2_K", Type::Q2_K, 10},
    {"Q3_K_S", Type::Q3_K, 11}, {"Q3_K_M", Type::Q3_K, 12}, {"Q3_K_L", Type::Q3_K, 13},
    {"Q4_K_S", Type::Q4_K, 14}, {"Q4_K_M", Type::Q4_K, 15}, {"Q5_K_S", Type::Q5_K, 16},
    {"Q5_K_M", Type::Q5_K, 17}, {"Q6_K", Type::Q6_K, 18},     {"IQ4_NL", Type::IQ4_NL, 25},
    {"IQ4_XS", Type::IQ4_XS, 30}, {"MXFP4_MOE", Type::MXFP4, 38},
    // The low-bit i-quant mixes (llama_ftype ids; IQ2_S's base is IQ2_XS and IQ2_M's IQ2_S, as
    // in llama.cpp) and the ternary ones.
    {"IQ2_XXS", Type::IQ2_XXS, 19}, {"IQ2_XS", Type::IQ2_XS, 20}, {"IQ3_XS", Type::IQ3_S, 22},
    {"IQ3_XXS", Type::IQ3_XXS, 23}, {"IQ1_S", Type::IQ1_S, 24},  {"IQ3_S", Type::IQ3_S, 26},
    {"IQ3_M", Type::IQ3_S, 27},     {"IQ2_S", Type::IQ2_XS, 28}, {"IQ2_M", Type::IQ2_S, 29},
    {"IQ1_M", Type::IQ1_M, 31},     {"TQ1_0", Type::TQ1_0, 36},  {"TQ2_0", Type::TQ2_0, 37},
};

bool sameName(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::toupper(static_cast<unsigned char>(a[i])) !=
            std::toupper(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

// Layer index from "blk.N.", or -1.
int layerOf(std::string_view name) {
    if (name.substr(0, 4) != "blk.") return -1;
    int layer = 0;
    size_t i = 4;
    if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i)
        layer = layer * 10 + (name[i] - '0');
    return layer;
}

// The layers where _M mixes spend more bits: the first and last eighth, and every third between.
bool useMoreBits(int layer, int nLayers) {
    return layer < nLayers / 8 || layer >= 7 * nLayers / 8 || (layer - nLayers / 8) % 3 == 2;
}

// A 32-element-block type for rows that 256-element blocks cannot tile.
Type smallBlockFallback(Type t) {
    switch (t) {
    case Type::Q2_K:
    case Type::Q3_K: return Type::Q4_0;
    case Type::Q4_K: return Type::Q5_0;
    case Type::Q5_K: return Type::Q5_1;
    case Type::Q6_K: return Type::Q8_0;
    case Type::IQ4_XS:
    case Type::IQ3_S:
    case Type::IQ3_XXS:
    case Type::IQ2_S:
    case Type::IQ2_XS:
    case Type::IQ2_XXS:
    case Type::IQ1_M:
    case Type::IQ1_S: return Type::IQ4_NL;
    case Type::TQ1_0:
    case Type::TQ2_0: return Type::Q4_0;
    default: return t;
    }
}

bool isAny(std::string_view m, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (m == n) return true;
    return false;
}

// llama.cpp's rules for the 1- and 2-bit mixes (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M) on
// the tensors other than the output and token embedding.
Type lowBitRule(std::string_view m, std::string_view n, int layer, const TensorRole& role, Type t) {
    const bool iq2sm = m == "IQ2_S" || m == "IQ2_M";
    if (contains(n, "attn_v.weight"))
        return role.gqa >= 4 || role.nExpert >= 4 ? Type::Q4_K : iq2sm ? Type::IQ3_S : Type::Q2_K;
    if (role.nExpert == 8 && contains(n, "attn_k.weight")) return Type::Q4_K;
    if (contains(n, "ffn_down.weight") || contains(n, "ffn_down_exps.weight"))
        return layer < int(role.nLayers) / 8 ? (iq2sm ? Type::IQ3_S : Type::Q2_K) : t;
    if (contains(n, "attn_output.weight")) {
        if (role.nExpert == 8) return Type::Q5_K;
        if (m == "IQ1_S" || m == "IQ1_M") return Type::IQ2_XXS;
        if (iq2sm) return Type::IQ3_S;
    }
    return t;
}

// The 3-bit i-quant mixes (IQ3_XXS, IQ3_XS, IQ3_S, IQ3_M).
Type threeBitRule(std::string_view m, std::string_view n, int layer, const TensorRole& role, Type t) {
    const int nLayers = int(role.nLayers);
    // llama.cpp gives 8-expert models' attn_v and attn_k Q8_0 (cheap next to the experts).
    if (role.nExpert == 8 && (contains(n, "attn_v.weight") || contains(n, "attn_k.weight"))) return Type::Q8_0;
    if (contains(n, "attn_v.weight")) {
        if (m == "IQ3_XXS") return role.gqa >= 4 ? Type::Q4_K : role.hasImatrix ? Type::IQ3_XXS : Type::IQ3_S;
        if (m == "IQ3_M" || role.gqa >= 4) return Type::Q4_K;
        return t;
    }
    if (contains(n, "attn_k.weight") || contains(n, "attn_q.weight")) {
        if (m == "IQ3_XS") return Type::IQ3_XXS;
        if (m == "IQ3_XXS") return Type::IQ2_S;
        return t;
    }
    if (contains(n, "ffn_down.weight") || contains(n, "ffn_down_exps.weight")) {
        if (m == "IQ3_XXS" && !role.hasImatrix) return layer < nLayers / 8 ? Type::Q4_K : Type::Q3_K;
        if (m == "IQ3_M" && (layer < nLayers / 8 || (role.nExpert == 8 && useMoreBits(layer, nLayers))))
            return Type::Q4_K;
        return t;
    }
    if (contains(n, "attn_output.weight")) {
        if (role.nExpert == 8) return Type::Q5_K;
        if (m == "IQ3_XXS") return Type::IQ3_S;
        if (m == "IQ3_M") return Type::Q4_K;
        return t;
    }
    const bool gateUp = contains(n, "ffn_gate.weight") || contains(n, "ffn_up.weight") ||
                        contains(n, "ffn_gate_exps.weight") || contains(n, "ffn_up_exps.weight");
    if (gateUp && m == "IQ3_XS" && layer >= nLayers / 8 && layer < 7 * nLayers / 8) return Type::IQ3_XXS;
    return t;
}

} // namespace

std::span<const Mix> allMixes() { return kMixes; }

std::optional<Mix> mixFromName(std::string_view name) {
    for (const Mix& m : kMixes)
        if (sameName(m.name, name)) return m;
    // Aliases users type: a K-quant without a size letter means the _M mix.
    if (sameName(name, "Q3_K")) return mixFromName("Q3_K_M");
    if (sameName(name, "Q4_K")) return mixFromName("Q4_K_M");
    if (sameName(name, "Q5_K")) return mixFromName("Q5_K_M");
    if (sameName(name, "MXFP4")) return mixFromName("MXFP4_MOE");
    return std::nullopt;
}

Type chooseType(const Mix& mix, const TensorRole& role) {
    const std::string_view n = role.name;
    // Norms, biases (the experts' are 2-D), and the experts' routers (small, and their order
    // decides which experts run) stay F32.
    if (role.nDims < 2 || contains(n, "ffn_gate_inp.weight") || !n.ends_with(".weight")) return Type::F32;
    // Convolution kernels (the delta net's [C][4], lfm2's short [E][3]) stay F32, as llama.cpp
    // keeps them (its convolution reads only F32 kernels).
    if (contains(n, "ssm_conv1d") || contains(n, "shortconv.conv")) return Type::F32;
    // bert's position and token-type embeddings stay F32, as llama.cpp keeps them (it adds the
    // token-type row to F32 activations directly).
    if (n == "position_embd.weight" || n == "token_types.weight") return Type::F32;
    const std::string_view m = mix.name;
    const Type base = mix.baseType;
    if (base == Type::F32 || base == Type::F16 || base == Type::BF16) return base;

    const int layer = layerOf(n);
    const int nLayers = int(role.nLayers);
    Type t = base;
    const bool isOutput = n == "output.weight" || (!role.hasOutput && n == "token_embd.weight");
    const bool iq4 = m == "IQ4_NL" || m == "IQ4_XS";
    const bool lowBit = isAny(m, {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M"});
    const bool threeBit = isAny(m, {"IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M"});
    if (isOutput) {
        if (role.ne0 % typeInfo(base)->blockElems != 0 || base == Type::MXFP4) t = Type::Q8_0;
        else if (lowBit || m == "IQ3_XXS") t = Type::Q5_K;
        else if (base != Type::Q8_0) t = Type::Q6_K;
    } else if (n == "token_embd.weight" && (lowBit || m == "IQ3_XXS" || m == "TQ1_0" || m == "TQ2_0")) {
        // llama.cpp keeps the (untied) token embedding out of the lowest-bit types.
        if (m == "TQ1_0" || m == "TQ2_0") t = Type::Q4_K;
        else if (m == "IQ2_S" || m == "IQ2_M" || m == "IQ3_XXS") t = Type::IQ3_S;
        else t = Type::Q2_K;
    } else if (lowBit) {
        t = lowBitRule(m, n, layer, role, base);
    } else if (threeBit) {
        t = threeBitRule(m, n, layer, role, base);
    } else if (base == Type::MXFP4) {
        // MXFP4 is for the experts of mixture-of-experts layers (3-D); the rest gets Q8_0.
        t = role.nDims >= 3 ? Type::MXFP4 : Type::Q8_0;
    } else if (contains(n, "attn_v.weight")) {
        if (m == "Q2_K") t = role.gqa >= 4 ? Type::Q4_K : Type::Q3_K;
        else if (m == "Q3_K_M") t = layer < 2 ? Type::Q5_K : Type::Q4_K;
        else if (m == "Q3_K_L") t = Type::Q5_K;
        else if ((m == "Q4_K_M" || m == "Q5_K_M") && useMoreBits(layer, nLayers)) t = Type::Q6_K;
        else if (m == "Q4_K_S" && layer < 4) t = Type::Q5_K;
        else if (iq4 && role.gqa >= 4) t = Type::Q5_K;
        if (role.nExpert == 8) t = Type::Q8_0; // cheap next to the experts, as in llama.cpp
    } else if (contains(n, "attn_k.weight") && role.nExpert == 8) {
        t = Type::Q8_0;
    } else if (contains(n, "ffn_down.weight") || contains(n, "ffn_down_exps.weight")) {
        if (m == "Q2_K") t = Type::Q3_K;
        else if (m == "Q3_K_M") t = layer < nLayers / 16 ? Type::Q5_K : Type::Q4_K;
        else if (m == "Q3_K_L") t = Type::Q5_K;
        else if ((m == "Q4_K_M" || m == "Q5_K_M") && useMoreBits(layer, nLayers)) t = Type::Q6_K;
        else if ((m == "Q4_K_S" || (iq4 && !role.hasImatrix)) && layer < nLayers / 8) t = Type::Q5_K;
        // With an imatrix, llama.cpp guards the first eighth's ffn_down of Q4_0 / Q5_0 files.
        else if ((m == "Q4_0" || m == "Q5_0") && role.hasImatrix && layer < nLayers / 8)
            t = m == "Q4_0" ? Type::Q4_1 : Type::Q5_1;
    } else if (contains(n, "attn_output.weight") && role.nExpert == 8) {
        if (isAny(m, {"Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M", "IQ4_NL", "IQ4_XS"})) t = Type::Q5_K;
    } else if (contains(n, "attn_output.weight")) {
        if (m == "Q2_K") t = Type::Q3_K;
        else if (m == "Q3_K_M") t = Type::Q4_K;
        else if (m == "Q3_K_L") t = Type::Q5_K;
    }
    const TypeInfo* info = typeInfo(t);
    if (info && role.ne0 % info->blockElems != 0) t = smallBlockFallback(t);
    info = typeInfo(t);
    if (info && role.ne0 % info->blockElems != 0) t = Type::F16; // no block tiles this row
    return t;
}

} // namespace hearth::quant
