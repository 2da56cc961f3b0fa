// `hearth-cli quantize`: re-encodes every tensor of a model with the type its mix chooses,
// streaming row by row (dequantize the source, quantize into the output); metadata is copied.
#include "commands.h"

#include "hearth/gguf.h"
#include "hearth/imatrix.h"
#include "hearth/model_info.h"
#include "hearth/quant.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace hearth::cli {

namespace {
const char* kQuantizeHelp =
    "usage: hearth-cli quantize IN.gguf OUT.gguf TYPE_OR_MIX [--threads N] [--imatrix FILE]\n"
    "  Mixes: Q4_K_M Q4_K_S Q5_K_M Q5_K_S Q6_K Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q3_K_L Q3_K_M Q3_K_S Q2_K\n"
    "         IQ4_NL IQ4_XS MXFP4_MOE IQ3_M IQ3_S IQ3_XS IQ3_XXS IQ2_M IQ2_S IQ2_XS IQ2_XXS IQ1_M\n"
    "         IQ1_S TQ2_0 TQ1_0 F16 BF16 F32. The source may be F32, F16, BF16 or any type we can dequantize.\n"
    "  --imatrix FILE: importance matrix (hearth-cli imatrix, or llama.cpp's imatrix, GGUF or\n"
    "         legacy .dat) weighting the Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL IQ4_XS Q2_K..Q6_K IQ3_XXS IQ3_S\n"
    "         IQ2_XXS IQ2_XS IQ2_S IQ1_S IQ1_M searches as llama.cpp does (the same bytes as\n"
    "         ggml_quantize_chunk with that imatrix). The IQ1_*, IQ2_* and IQ3_XXS mixes need one,\n"
    "         as in llama.cpp; TQ1_0 / TQ2_0 take none.\n";

// llama.cpp asks an importance matrix for tensors of the lowest-bit types, except the token
// embedding and the output.
bool tensorRequiresImatrix(std::string_view name, quant::Type type) {
    if (name == "token_embd.weight" || name == "output.weight") return false;
    return quant::requiresImportance(type);
}
} // namespace

int runQuantize(Args args) {
    std::vector<std::string> positional;
    int threads = 2;
    std::string imatrixPath;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kQuantizeHelp, stdout);
            return 0;
        } else if (a == "--threads" && i + 1 < args.size()) {
            const std::string_view v = args[++i];
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), threads);
            if (ec != std::errc() || p != v.data() + v.size() || threads < 1 || threads > 256) {
                std::fprintf(stderr, "hearth-cli quantize: --threads needs 1..256\n");
                return 2;
            }
        } else if (a == "--imatrix" && i + 1 < args.size()) {
            imatrixPath = std::string(args[++i]);
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli quantize: unknown or incomplete option '%.*s'\n",
                         int(a.size()), a.data());
            return 2;
        } else {
            positional.emplace_back(a);
        }
    }
    if (positional.size() != 3) {
        std::fputs(kQuantizeHelp, stderr);
        return 2;
    }
    const std::string &in = positional[0], &out = positional[1];
    const std::optional<quant::Mix> mix = quant::mixFromName(positional[2]);
    if (!mix) {
        std::fprintf(stderr, "hearth-cli quantize: unknown type or mix '%s'\n", positional[2].c_str());
        return 2;
    }
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(in, out, ec)) {
        std::fprintf(stderr, "hearth-cli quantize: refusing to overwrite the input file\n");
        return 2;
    }
    std::optional<imatrix::Data> imat;
    if (!imatrixPath.empty()) {
        auto d = imatrix::read(imatrixPath);
        if (!d) {
            std::fprintf(stderr, "hearth-cli quantize: %s\n", d.status().toString().c_str());
            return 2;
        }
        imat.emplace(std::move(*d));
        std::fprintf(stderr, "imatrix %s: %zu entries, %u chunks of %u%s\n", imatrixPath.c_str(), imat->entries.size(),
                     imat->chunkCount, imat->chunkSize, imat->legacy ? " (legacy format)" : "");
    }
    auto file = gguf::File::open(in);
    if (!file) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", in.c_str(), file.status().toString().c_str());
        return 2;
    }
    auto info = readModelInfo(*file);
    if (!info) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", in.c_str(), info.status().toString().c_str());
        return 2;
    }

    gguf::Writer w(file->version());
    for (const gguf::KeyValue& kv : file->metadata()) // a split model's parts become one file
        if (!gguf::isSplitKey(kv.key)) w.set(kv.key, kv.value);
    w.set("general.file_type", gguf::Value::u32(mix->fileType));
    const bool quantized = mix->baseType != quant::Type::F32 && mix->baseType != quant::Type::F16 &&
                           mix->baseType != quant::Type::BF16;
    if (quantized) w.set("general.quantization_version", gguf::Value::u32(2));

    const size_t n = file->tensors().size();
    for (size_t ti = 0; ti < n; ++ti) {
        const gguf::TensorInfo& t = file->tensors()[ti];
        const quant::TypeInfo* src = quant::typeInfo(t.type);
        quant::TensorRole role;
        role.name = t.name;
        role.ne0 = t.ne[0];
        role.nDims = t.nDims;
        role.nLayers = info->blockCount;
        role.gqa = info->headCount / std::max(1u, info->headCountKv);
        role.nExpert = info->expertCount;
        role.hasOutput = !info->tiedEmbeddings;
        role.hasImatrix = imat.has_value();
        // 1-D tensors and tensors we cannot decode keep their type and bytes.
        quant::Type type = t.nDims < 2 ? t.type : quant::chooseType(*mix, role);
        if (!src->canDequantize && type != t.type) {
            std::fprintf(stderr, "hearth-cli: %s: tensor '%s' has type %s, which cannot be converted\n",
                         in.c_str(), t.name.c_str(), src->name.data());
            return 2;
        }
        const bool needsImatrix = type != t.type && tensorRequiresImatrix(t.name, type);
        if (needsImatrix && !imat) {
            std::fprintf(stderr,
                         "hearth-cli quantize: %s: tensor '%s' would be %s, which requires an importance matrix "
                         "(--imatrix FILE; make one with hearth-cli imatrix): without one llama.cpp refuses it too\n",
                         positional[2].c_str(), t.name.c_str(), quant::typeName(type).data());
            return 2;
        }
        // The importance of each column, per expert: [ne2][ne0].
        std::shared_ptr<std::vector<float>> importance;
        if (imat && type != t.type && quant::takesImportance(type)) {
            auto imp = imatrix::importanceFor(*imat, t.name, int64_t(t.ne[0]), int64_t(t.ne[2]));
            if (!imp) {
                std::fprintf(stderr, "hearth-cli quantize: %s: %s\n", imatrixPath.c_str(), imp.status().toString().c_str());
                return 2;
            }
            if (*imp) importance = std::make_shared<std::vector<float>>(std::move(**imp));
            else if (needsImatrix) {
                std::fprintf(stderr, "hearth-cli quantize: %s has no entry for '%s', which %s requires\n",
                             imatrixPath.c_str(), t.name.c_str(), quant::typeName(type).data());
                return 2;
            } else std::fprintf(stderr, "imatrix has no entry for %s: quantized without one\n", t.name.c_str());
        }
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        const uint8_t* data = file->tensorData(t);
        Status added;
        if (type == t.type) {
            added = w.addTensor(t.name, type, shape, std::vector<uint8_t>(data, data + t.bytes));
        } else {
            const int64_t rowLen = int64_t(t.ne[0]);
            const int64_t rows = int64_t(t.elements() / t.ne[0]);
            const uint64_t srcRow = *quant::rowBytes(t.type, uint64_t(rowLen));
            const uint64_t dstRow = *quant::rowBytes(type, uint64_t(rowLen));
            const int64_t rowsPerMatrix = int64_t(t.ne[1]);
            added = w.addTensor(t.name, type, shape, [=](uint8_t* dst, uint64_t) -> Status {
                std::vector<Status> results(static_cast<size_t>(threads));
                auto work = [&](int k) {
                    std::vector<float> row(static_cast<size_t>(rowLen));
                    for (int64_t r = rows * k / threads; r < rows * (k + 1) / threads; ++r) {
                        Status s = quant::dequantizeRow(t.type, data + uint64_t(r) * srcRow, row.data(), rowLen);
                        const float* imp = importance ? importance->data() + (r / rowsPerMatrix) * rowLen : nullptr;
                        if (s.isOk())
                            s = quant::quantizeRowWeighted(type, row.data(), dst + uint64_t(r) * dstRow, rowLen, imp);
                        if (!s.isOk()) {
                            results[size_t(k)] = s;
                            return;
                        }
                    }
                };
                std::vector<std::thread> pool;
                for (int k = 1; k < threads; ++k) pool.emplace_back(work, k);
                work(0);
                for (auto& th : pool) th.join();
                for (const Status& s : results) HEARTH_RETURN_IF_ERROR(s);
                std::fprintf(stderr, "[%zu/%zu] %-32s %s -> %s%s\n", ti + 1, n, t.name.c_str(), src->name.data(),
                             quant::typeName(type).data(), importance ? " (imatrix)" : "");
                return Status::ok();
            });
        }
        if (!added.isOk()) {
            std::fprintf(stderr, "hearth-cli: %s: %s\n", in.c_str(), added.toString().c_str());
            return 2;
        }
    }
    Status s = w.writeFile(out);
    if (!s.isOk()) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", out.c_str(), s.toString().c_str());
        return 1;
    }
    std::fprintf(stderr, "hearth-cli: wrote %s (%s)\n", out.c_str(), mix->name.data());
    return 0;
}

} // namespace hearth::cli
