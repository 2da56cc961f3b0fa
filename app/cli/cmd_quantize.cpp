// `hearth-cli quantize`: re-encodes every tensor of a model with the type its mix chooses
// (hearth::quant::quantizeModel), printing a line per converted tensor.
#include "commands.h"

#include "hearth/imatrix.h"
#include "hearth/quant.h"
#include "hearth/quantize_model.h"

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
    quant::QuantizeModelOptions options;
    options.threads = threads;
    options.importance = imat ? &*imat : nullptr;
    options.progress = [](const quant::QuantizeProgress& p) {
        if (p.from == p.to) return;
        std::fprintf(stderr, "[%zu/%zu] %-32s %s -> %s%s\n", p.tensorIndex + 1, p.tensorCount,
                     std::string(p.tensor).c_str(), quant::typeName(p.from).data(), quant::typeName(p.to).data(),
                     p.weighted ? " (imatrix)" : "");
    };
    options.note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    Status s = quant::quantizeModel(in, out, *mix, options);
    if (!s.isOk()) {
        const bool ioFailure = s.code() == ErrorCode::IoError;
        std::fprintf(stderr, "hearth-cli quantize: %s: %s\n", ioFailure ? out.c_str() : in.c_str(),
                     s.toString().c_str());
        if (s.code() == ErrorCode::InvalidArgument && !imat)
            std::fprintf(stderr, "  (--imatrix FILE; make one with hearth-cli imatrix)\n");
        return ioFailure ? 1 : 2;
    }
    std::fprintf(stderr, "hearth-cli: wrote %s (%s)\n", out.c_str(), mix->name.data());
    return 0;
}

} // namespace hearth::cli
