// Importance matrices as llama.cpp's imatrix tool makes them: per weight matrix, the sum over
// tokens of each input channel's squared activation (per expert for mixture-of-experts
// matrices) and how many tokens went in; collected while the model runs on calibration text,
// written in llama.cpp's GGUF format, read from it or from its older binary format, and turned
// into the per-column importance the quantizers take.
#pragma once

#include "hearth/evaluate.h"
#include "hearth/status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hearth::imatrix {

struct Entry {
    std::vector<float> sums;    // [matrices][cols]: Σ x² per input channel
    std::vector<int64_t> counts; // [matrices]: tokens seen (per expert for MoE matrices)
    int64_t cols() const { return counts.empty() ? 0 : int64_t(sums.size() / counts.size()); }
};

struct Data {
    std::map<std::string, Entry> entries; // by weight name ("blk.0.attn_q.weight")
    std::vector<std::string> datasets;
    uint32_t chunkCount = 0;
    uint32_t chunkSize = 0;
    bool legacy = false; // read from the old binary format: sums are already means × ncall
};

// Reads a GGUF imatrix (tensors NAME.in_sum2 F32 [cols][matrices] and NAME.counts F32
// [1][matrices], keys imatrix.datasets / chunk_count / chunk_size) or, when the file is not
// GGUF, the legacy binary format. Errors name the file and what is wrong with it.
Result<Data> read(const std::string& path);
// Writes the GGUF format (general.type = "imatrix"), entries in name order.
Status write(const Data& data, const std::string& path);

// The importance llama.cpp's quantize derives for a weight of `cols` columns and `matrices`
// matrices (experts): sums / counts per matrix (1 where a matrix saw no token; the legacy
// format's values divided by their call count). nullopt when the file has no entry for it;
// an error when the entry's size does not match the weight.
Result<std::optional<std::vector<float>>> importanceFor(const Data& data, const std::string& name, int64_t cols,
                                                        int64_t matrices);

// Accumulates as llama.cpp's collector does: dense matmuls of at least 16 rows whose weight is
// in a layer ("blk.*", or output.weight with processOutput), and every expert matmul.
class Collector final : public ActivationObserver {
public:
    explicit Collector(bool processOutput = false) : m_processOutput(processOutput) {}
    void onMatMul(std::string_view weight, const float* x, int64_t rows, int64_t cols) override;
    void onMatMulId(std::string_view weight, const float* x, bool shared, const int32_t* ids, int64_t tokens,
                    int64_t used, int64_t cols, int64_t nExperts) override;
    // The first problem seen (non-finite activations, a weight whose width changed).
    const Status& status() const { return m_status; }
    const std::map<std::string, Entry>& entries() const { return m_entries; }

private:
    Entry* entryFor(std::string_view weight, int64_t cols, int64_t matrices);
    bool m_processOutput = false;
    std::map<std::string, Entry> m_entries;
    Status m_status;
};

} // namespace hearth::imatrix
