// What an opened gguf::File holds (its parts' bytes, the parsed metadata and tensor table), shared
// by the reader (reader.cpp: one file) and the split-model loader (split.cpp: several parts).
#pragma once

#include "hearth/gguf.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace hearth::gguf {

namespace detail {

// One file's bytes: mapped, read into memory, or borrowed (fromMemory). Releases what it owns.
struct PartBytes {
    std::string path;
    int fd = -1; // open while mapped, until handed to the File's DataReader
    void* mapping = nullptr;
    size_t mappingSize = 0;
    void* owned = nullptr; // the file read into memory (useMmap = false)
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint64_t dataOffset = 0;
    uint64_t tensorCount = 0;

    PartBytes() = default;
    PartBytes(const PartBytes&) = delete;
    PartBytes& operator=(const PartBytes&) = delete;
    ~PartBytes();
};

} // namespace detail

struct File::Impl {
    std::vector<std::unique_ptr<detail::PartBytes>> parts; // parts[0]: the file opened
    std::vector<PartInfo> partInfo;
    uint32_t version = 0;
    uint32_t alignment = 32;
    std::vector<KeyValue> metadata;
    std::unordered_map<std::string, size_t> keyIndex;
    std::vector<TensorInfo> tensors;
    std::unordered_map<std::string, size_t> tensorIndex;
    std::shared_ptr<const DataReader> reader;
};

namespace detail {

// Maps (or reads, with useMmap = false) one file and parses it as a one-part File::Impl.
Result<std::unique_ptr<File::Impl>> openOnePart(const std::string& path,
                                                const ReadOptions& options);

// When `first` is the first part of a split model (split.count > 1), opens and checks the other
// parts and appends their bytes and tensors to it. A file without split keys is left alone.
Status openOtherParts(File::Impl& first, const ReadOptions& options);

// Fills partInfo and the DataReader from the parts (handing it their descriptors).
void finishParts(File::Impl& f);

} // namespace detail

} // namespace hearth::gguf
