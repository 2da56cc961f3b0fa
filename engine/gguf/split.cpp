// Split models (llama.cpp's gguf-split format): part file names, and opening the other parts of a
// model whose first part was opened, each checked against the first before its tensors join.
#include "gguf/file_impl.h"
#include "hearth/gguf.h"

#include <cstdio>
#include <limits>
#include <sys/stat.h>

namespace hearth::gguf {

namespace {

constexpr std::string_view kPartEnding = ".gguf";
constexpr size_t kDigits = 5; // llama.cpp's "%s-%05d-of-%05d.gguf"

const Value* findKey(const File::Impl& f, std::string_view key) {
    auto it = f.keyIndex.find(std::string(key));
    return it == f.keyIndex.end() ? nullptr : &f.metadata[it->second].value;
}

// split.no / split.count: any integer type holding 0..65535 (llama.cpp writes u16).
Result<uint32_t> splitNumber(const File::Impl& f, std::string_view key, const std::string& where) {
    const Value* v = findKey(f, key);
    if (!v) return invalidFormat(where + " has no " + std::string(key) + " key");
    const auto u = v->asUInt();
    if (!u || *u > std::numeric_limits<uint16_t>::max())
        return invalidFormat(where + ": " + std::string(key) + " is " + v->toDisplayString() +
                             ", not a number from 0 to 65535");
    return uint32_t(*u);
}

std::string count(uint64_t n) {
    return std::to_string(n);
}

bool parseDigits(std::string_view s, uint32_t& out) {
    if (s.size() != kDigits) return false;
    out = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        out = out * 10 + uint32_t(c - '0');
    }
    return true;
}

bool fileExists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

} // namespace

bool isSplitKey(std::string_view key) {
    return key == kSplitNoKey || key == kSplitCountKey || key == kSplitTensorsCountKey;
}

std::optional<SplitName> parseSplitName(std::string_view path) {
    // "-" 5 digits "-of-" 5 digits ".gguf"
    const size_t tail = 1 + kDigits + 4 + kDigits + kPartEnding.size();
    if (path.size() <= tail) return std::nullopt;
    const std::string_view end = path.substr(path.size() - tail);
    if (end[0] != '-' || end.substr(1 + kDigits, 4) != "-of-" ||
        end.substr(end.size() - kPartEnding.size()) != kPartEnding)
        return std::nullopt;
    SplitName name;
    uint32_t oneBased = 0;
    if (!parseDigits(end.substr(1, kDigits), oneBased) ||
        !parseDigits(end.substr(1 + kDigits + 4, kDigits), name.count))
        return std::nullopt;
    if (oneBased == 0 || name.count == 0 || oneBased > name.count) return std::nullopt;
    name.index = oneBased - 1;
    name.prefix = std::string(path.substr(0, path.size() - tail));
    return name;
}

std::string splitPartPath(std::string_view prefix, uint32_t index, uint32_t count) {
    char tail[48];
    std::snprintf(tail, sizeof tail, "-%05u-of-%05u.gguf", index + 1, count);
    return std::string(prefix) + tail;
}

Status detail::openOtherParts(File::Impl& f, const ReadOptions& options) {
    const std::string path = f.parts.front()->path;
    const std::optional<SplitName> name = parseSplitName(path);
    const std::string namedAs =
        name ? "is named as part " + count(name->index + 1) + " of " + count(name->count) : "";
    if (!findKey(f, kSplitCountKey)) {
        if (name && name->count > 1)
            return invalidFormat(path + " " + namedAs + " of a split model but has no " +
                                 std::string(kSplitCountKey) + " key");
        return Status::ok(); // a file of its own
    }
    HEARTH_ASSIGN_OR_RETURN(const uint32_t parts, splitNumber(f, kSplitCountKey, path));
    if (parts <= 1) { // 1: a model in one part; 0: one merged back by gguf-split --merge
        if (name && name->count > 1)
            return invalidFormat(path + " " + namedAs + " of a split model but its " +
                                 std::string(kSplitCountKey) + " is " + count(parts));
        return Status::ok();
    }
    HEARTH_ASSIGN_OR_RETURN(const uint32_t no, splitNumber(f, kSplitNoKey, path));
    if (no >= parts)
        return invalidFormat(path + ": " + std::string(kSplitNoKey) + " " + count(no) +
                             " is not below " + std::string(kSplitCountKey) + " " + count(parts));
    if (no != 0)
        return invalidArgument(path + " is part " + count(no + 1) + " of " + count(parts) +
                               " of a split model: open its first part, " +
                               (name ? splitPartPath(name->prefix, 0, name->count)
                                     : "NAME" + splitPartPath("", 0, parts)));
    if (!name || name->index != 0 || name->count != parts)
        return invalidFormat(path + " is the first of " + count(parts) +
                             " parts of a split model but is not named NAME" +
                             splitPartPath("", 0, parts) + ", so its other parts cannot be found");

    const Value* total = findKey(f, kSplitTensorsCountKey);
    const auto expected = total ? total->asInt() : std::nullopt;
    if (!total)
        return invalidFormat(path + " has no " + std::string(kSplitTensorsCountKey) + " key");
    if (!expected || *expected < 0 || *expected > std::numeric_limits<int32_t>::max())
        return invalidFormat(path + ": " + std::string(kSplitTensorsCountKey) + " is " +
                             total->toDisplayString() + ", not a tensor count");

    for (uint32_t i = 1; i < parts; ++i) {
        const std::string partPath = splitPartPath(name->prefix, i, parts);
        const std::string where =
            "part " + count(i + 1) + " of " + count(parts) + " (" + partPath + ")";
        if (!fileExists(partPath)) return notFound(where + " is missing");
        Result<std::unique_ptr<File::Impl>> opened = openOnePart(partPath, options);
        if (!opened) return opened.status().withContext(where);
        File::Impl& part = **opened;
        HEARTH_ASSIGN_OR_RETURN(const uint32_t partNo, splitNumber(part, kSplitNoKey, where));
        HEARTH_ASSIGN_OR_RETURN(const uint32_t partCount, splitNumber(part, kSplitCountKey, where));
        if (partNo != i)
            return invalidFormat(where + ": " + std::string(kSplitNoKey) + " is " + count(partNo) +
                                 ", expected " + count(i) + " (0-based)");
        if (partCount != parts)
            return invalidFormat(where + ": " + std::string(kSplitCountKey) + " is " +
                                 count(partCount) + ", the first part says " + count(parts));
        if (const Value* t = findKey(part, kSplitTensorsCountKey); t && t->asInt() != expected)
            return invalidFormat(where + ": " + std::string(kSplitTensorsCountKey) + " is " +
                                 t->toDisplayString() + ", the first part says " +
                                 count(uint64_t(*expected)));
        if (f.tensors.size() + part.tensors.size() > options.maxTensorCount)
            return invalidFormat(where + ": the parts hold more than " +
                                 count(options.maxTensorCount) + " tensors");
        for (TensorInfo& t : part.tensors) {
            if (auto it = f.tensorIndex.find(t.name); it != f.tensorIndex.end()) {
                const uint32_t other = f.tensors[it->second].part;
                return invalidFormat(where + ": tensor '" + t.name + "' is also in part " +
                                     count(other + 1) + " (" + f.parts[other]->path + ")");
            }
            t.part = i;
            f.tensorIndex.emplace(t.name, f.tensors.size());
            f.tensors.push_back(std::move(t));
        }
        f.parts.push_back(std::move(part.parts.front()));
    }
    if (f.tensors.size() != uint64_t(*expected))
        return invalidFormat(path + ": " + std::string(kSplitTensorsCountKey) + " is " +
                             count(uint64_t(*expected)) + " but the " + count(parts) +
                             " parts hold " + count(f.tensors.size()) + " tensors");
    return Status::ok();
}

} // namespace hearth::gguf
