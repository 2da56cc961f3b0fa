// Re-quantizing a whole GGUF model to a named mix: every tensor re-encoded with the type the mix
// chooses (optionally weighted by an importance matrix), metadata copied, with progress reports
// and cancellation between rows; plus the size the output will have.
#pragma once

#include "hearth/imatrix.h"
#include "hearth/quant.h"
#include "hearth/status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hearth::gguf {
class File;
}

namespace hearth::quant {

// What a progress callback hears after each tensor.
struct QuantizeProgress {
    size_t tensorIndex = 0; // 0-based, of tensorCount
    size_t tensorCount = 0;
    std::string_view tensor;
    Type from = Type::F32;
    Type to = Type::F32;
    bool weighted = false;  // quantized with the importance matrix
    double fraction = 0.0;  // of all tensor bytes to write, 0..1
};

struct QuantizeModelOptions {
    int threads = 2;
    const imatrix::Data* importance = nullptr; // not owned; null: no importance matrix
    // Called from the writing thread after each tensor.
    std::function<void(const QuantizeProgress&)> progress;
    // Polled between rows (from any worker thread); true stops the job with ErrorCode::Cancelled
    // and no output file.
    std::function<bool()> cancelled;
    // Notes worth showing (a tensor the importance matrix has no entry for).
    std::function<void(const std::string&)> note;
};

// Writes `out` (through a temporary file: a failure or a cancel leaves nothing under that name).
// Errors: unreadable input, a tensor type that cannot be converted, a mix that requires an
// importance matrix without one (InvalidArgument), I/O errors, Cancelled.
Status quantizeModel(const std::string& in, const std::string& out, const Mix& mix,
                     const QuantizeModelOptions& options = {});

// The bytes of tensor data the mix would write for `file` (metadata not counted: it is small).
Result<uint64_t> estimateQuantizedBytes(const gguf::File& file, const Mix& mix, bool withImportance = false);

} // namespace hearth::quant
