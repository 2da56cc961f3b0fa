// `hearth-cli split`: writes a model as llama.cpp's gguf-split parts (NAME-00001-of-0000N.gguf,
// ...) by tensors or bytes per part, or merges a split model back into one file (--merge).
#include "commands.h"
#include "hearth/gguf.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace hearth::cli {

namespace {

const char* kSplitHelp =
    "usage: hearth-cli split IN.gguf OUT_PREFIX (--max-size SIZE | --max-tensors N)\n"
    "       hearth-cli split --merge IN-00001-of-0000N.gguf OUT.gguf\n"
    "  Writes OUT_PREFIX-00001-of-0000N.gguf, ... as llama.cpp's gguf-split does (the same "
    "bytes):\n"
    "  the first part holds all metadata, each part at most N tensors or SIZE bytes of tensor "
    "data\n"
    "  (a larger tensor gets a part of its own). SIZE as gguf-split reads it: 500M, 2G are 10^6 "
    "and\n"
    "  10^9 bytes (Hugging Face's file limit counts so); 512MiB, 2GiB powers of 1024; or bytes.\n"
    "  IN may itself be split (give its first part). --merge writes a split model as one file.\n";

// "2G" -> 2e9, "1.5GiB" -> 1.5 * 2^30, "1000000" -> 1e6. False for anything else.
bool parseSplitSize(std::string_view text, uint64_t& bytes) {
    size_t i = 0;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    double v = 0.0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + i, v);
    if (i == 0 || ec != std::errc() || end != text.data() + i) return false;
    std::string unit(text.substr(i));
    for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
    double scale = 0.0;
    if (unit.empty() || unit == "B")
        scale = 1.0;
    else if (unit == "K" || unit == "KB")
        scale = 1e3;
    else if (unit == "M" || unit == "MB")
        scale = 1e6;
    else if (unit == "G" || unit == "GB")
        scale = 1e9;
    else if (unit == "KIB")
        scale = 1024.0;
    else if (unit == "MIB")
        scale = 1024.0 * 1024.0;
    else if (unit == "GIB")
        scale = 1024.0 * 1024.0 * 1024.0;
    else
        return false;
    const double b = v * scale;
    if (!(b >= 1.0 && b <= 1e15)) return false;
    bytes = uint64_t(b);
    return true;
}

// Copies a model's metadata (without split keys) and tensors (read through the file's data
// reader when written) into a writer.
Status copyModel(const std::shared_ptr<const gguf::File>& file, gguf::Writer& w) {
    for (const gguf::KeyValue& kv : file->metadata())
        if (!gguf::isSplitKey(kv.key)) w.set(kv.key, kv.value);
    for (const gguf::TensorInfo& t : file->tensors()) {
        const uint8_t* data = file->tensorData(t);
        if (!data) return invalidFormat("tensor '" + t.name + "' has no data");
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        HEARTH_RETURN_IF_ERROR(
            w.addTensor(t.name, t.type, shape, [file, data](uint8_t* dst, uint64_t bytes) {
                return file->dataReader()->read(data, size_t(bytes), dst);
            }));
    }
    return Status::ok();
}

bool sameFile(const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::exists(b, ec) && std::filesystem::equivalent(a, b, ec);
}

} // namespace

int runSplit(Args args) {
    std::vector<std::string> positional;
    gguf::Writer::SplitOptions options;
    bool merge = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kSplitHelp, stdout);
            return 0;
        } else if (a == "--merge") {
            merge = true;
        } else if (a == "--max-size" && i + 1 < args.size()) {
            if (!parseSplitSize(args[++i], options.maxBytes)) {
                std::fprintf(stderr,
                             "hearth-cli split: --max-size needs a size such as 512M or 2G\n");
                return 2;
            }
        } else if (a == "--max-tensors" && i + 1 < args.size()) {
            const std::string_view v = args[++i];
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), options.maxTensors);
            if (ec != std::errc() || p != v.data() + v.size() || options.maxTensors == 0) {
                std::fprintf(stderr, "hearth-cli split: --max-tensors needs a positive number\n");
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli split: unknown or incomplete option '%.*s'\n",
                         int(a.size()), a.data());
            return 2;
        } else {
            positional.emplace_back(a);
        }
    }
    const bool limited = options.maxBytes > 0 || options.maxTensors > 0;
    if (positional.size() != 2 || merge == limited ||
        (options.maxBytes > 0 && options.maxTensors > 0)) {
        std::fputs(kSplitHelp, stderr);
        return 2;
    }
    const std::string &in = positional[0], &out = positional[1];
    auto opened = gguf::File::open(in);
    if (!opened) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", in.c_str(),
                     opened.status().toString().c_str());
        return 2;
    }
    const auto file = std::make_shared<const gguf::File>(std::move(*opened));
    gguf::Writer w(file->version());
    if (Status s = copyModel(file, w); !s.isOk()) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", in.c_str(), s.toString().c_str());
        return 2;
    }
    if (merge) {
        for (const gguf::PartInfo& p : file->parts())
            if (sameFile(p.path, out)) {
                std::fprintf(stderr, "hearth-cli split: refusing to overwrite the input file %s\n",
                             p.path.c_str());
                return 2;
            }
        if (Status s = w.writeFile(out); !s.isOk()) {
            std::fprintf(stderr, "hearth-cli: %s: %s\n", out.c_str(), s.toString().c_str());
            return 1;
        }
        std::fprintf(stderr, "hearth-cli: wrote %s (%zu parts merged, %zu tensors)\n", out.c_str(),
                     file->parts().size(), file->tensors().size());
        return 0;
    }
    // Re-splitting a split model under its own name would replace its parts.
    for (const gguf::PartInfo& p : file->parts()) {
        const auto name = gguf::parseSplitName(p.path);
        std::error_code ec;
        if (name && std::filesystem::weakly_canonical(name->prefix, ec) ==
                        std::filesystem::weakly_canonical(out, ec)) {
            std::fprintf(stderr, "hearth-cli split: OUT_PREFIX %s would overwrite the input %s\n",
                         out.c_str(), p.path.c_str());
            return 2;
        }
    }
    auto written = w.writeSplit(out, options);
    if (!written) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", out.c_str(),
                     written.status().toString().c_str());
        return 1;
    }
    for (const std::string& p : *written) std::printf("%s\n", p.c_str());
    std::fprintf(stderr, "hearth-cli: wrote %zu parts (%zu tensors)\n", written->size(),
                 file->tensors().size());
    return 0;
}

} // namespace hearth::cli
