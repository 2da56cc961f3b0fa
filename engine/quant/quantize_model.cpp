// Whole-model re-quantization: streams each tensor row by row (dequantize the source, quantize
// into the output) on a few threads, reporting progress per tensor and stopping on request.
#include "hearth/quantize_model.h"

#include "hearth/gguf.h"
#include "hearth/model_info.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace hearth::quant {

namespace {

// llama.cpp asks an importance matrix for tensors of the lowest-bit types, except the token
// embedding and the output.
bool tensorRequiresImatrix(std::string_view name, Type type) {
    if (name == "token_embd.weight" || name == "output.weight") return false;
    return requiresImportance(type);
}

TensorRole roleOf(const gguf::TensorInfo& t, const ModelInfo& info, bool withImportance) {
    TensorRole role;
    role.name = t.name;
    role.ne0 = t.ne[0];
    role.nDims = t.nDims;
    role.nLayers = info.blockCount;
    role.gqa = info.headCount / std::max(1u, info.headCountKv);
    role.nExpert = info.expertCount;
    role.hasOutput = !info.tiedEmbeddings;
    role.hasImatrix = withImportance;
    return role;
}

// The type the tensor gets: 1-D tensors keep theirs.
Type targetType(const gguf::TensorInfo& t, const ModelInfo& info, const Mix& mix, bool withImportance) {
    return t.nDims < 2 ? t.type : chooseType(mix, roleOf(t, info, withImportance));
}

} // namespace

Result<uint64_t> estimateQuantizedBytes(const gguf::File& file, const Mix& mix, bool withImportance) {
    HEARTH_ASSIGN_OR_RETURN(ModelInfo info, readModelInfo(file));
    uint64_t total = 0;
    for (const gguf::TensorInfo& t : file.tensors()) {
        const Type type = targetType(t, info, mix, withImportance);
        if (type == t.type) {
            total += t.bytes;
            continue;
        }
        HEARTH_ASSIGN_OR_RETURN(uint64_t row, rowBytes(type, t.ne[0]));
        total += row * (t.elements() / t.ne[0]);
    }
    return total;
}

Status quantizeModel(const std::string& in, const std::string& out, const Mix& mix,
                     const QuantizeModelOptions& options) {
    const int threads = std::clamp(options.threads, 1, 256);
    const imatrix::Data* imat = options.importance;
    HEARTH_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(in));
    HEARTH_ASSIGN_OR_RETURN(ModelInfo info, readModelInfo(file));

    gguf::Writer w(file.version());
    for (const gguf::KeyValue& kv : file.metadata()) // a split model's parts become one file
        if (!gguf::isSplitKey(kv.key)) w.set(kv.key, kv.value);
    w.set("general.file_type", gguf::Value::u32(mix.fileType));
    const bool quantized = mix.baseType != Type::F32 && mix.baseType != Type::F16 && mix.baseType != Type::BF16;
    if (quantized) w.set("general.quantization_version", gguf::Value::u32(2));

    // Progress is measured in output bytes, so one big embedding does not look like one step.
    uint64_t totalBytes = 0;
    std::vector<uint64_t> outBytes;
    for (const gguf::TensorInfo& t : file.tensors()) {
        const Type type = targetType(t, info, mix, imat != nullptr);
        uint64_t b = t.bytes;
        if (type != t.type) {
            HEARTH_ASSIGN_OR_RETURN(uint64_t row, rowBytes(type, t.ne[0]));
            b = row * (t.elements() / t.ne[0]);
        }
        outBytes.push_back(b);
        totalBytes += b;
    }
    auto done = std::make_shared<uint64_t>(0);

    const size_t n = file.tensors().size();
    for (size_t ti = 0; ti < n; ++ti) {
        const gguf::TensorInfo& t = file.tensors()[ti];
        const TypeInfo* src = typeInfo(t.type);
        const Type type = targetType(t, info, mix, imat != nullptr);
        if (!src->canDequantize && type != t.type)
            return unsupported("tensor '" + t.name + "' has type " + std::string(src->name) +
                               ", which cannot be converted");
        const bool needsImatrix = type != t.type && tensorRequiresImatrix(t.name, type);
        if (needsImatrix && !imat)
            return invalidArgument(std::string(mix.name) + ": tensor '" + t.name + "' would be " +
                                   std::string(typeName(type)) +
                                   ", which requires an importance matrix (llama.cpp refuses it without one too)");
        // The importance of each column, per expert: [ne2][ne0].
        std::shared_ptr<std::vector<float>> importance;
        if (imat && type != t.type && takesImportance(type)) {
            HEARTH_ASSIGN_OR_RETURN(auto imp, imatrix::importanceFor(*imat, t.name, int64_t(t.ne[0]), int64_t(t.ne[2])));
            if (imp) importance = std::make_shared<std::vector<float>>(std::move(*imp));
            else if (needsImatrix)
                return invalidArgument("the importance matrix has no entry for '" + t.name + "', which " +
                                       std::string(typeName(type)) + " requires");
            else if (options.note)
                options.note("the importance matrix has no entry for " + t.name + ": quantized without one");
        }
        std::vector<uint64_t> shape(t.ne.begin(), t.ne.begin() + t.nDims);
        const uint8_t* data = file.tensorData(t);
        QuantizeProgress report{ti, n, t.name, t.type, type, importance != nullptr, 0.0};
        const uint64_t bytes = outBytes[ti];
        auto reportDone = [options, report, done, bytes, totalBytes]() mutable {
            *done += bytes;
            report.fraction = totalBytes ? double(*done) / double(totalBytes) : 1.0;
            if (options.progress) options.progress(report);
        };
        Status added;
        if (type == t.type) {
            // `file` outlives the write below, so its mapping can be read at write time.
            added = w.addTensor(t.name, type, shape, [data, reportDone, options](uint8_t* dst,
                                                                                 uint64_t bytes) mutable -> Status {
                if (options.cancelled && options.cancelled()) return {ErrorCode::Cancelled, "quantization cancelled"};
                std::copy(data, data + bytes, dst);
                reportDone();
                return Status::ok();
            });
        } else {
            const int64_t rowLen = int64_t(t.ne[0]);
            const int64_t rows = int64_t(t.elements() / t.ne[0]);
            HEARTH_ASSIGN_OR_RETURN(const uint64_t srcRow, rowBytes(t.type, uint64_t(rowLen)));
            HEARTH_ASSIGN_OR_RETURN(const uint64_t dstRow, rowBytes(type, uint64_t(rowLen)));
            const int64_t rowsPerMatrix = int64_t(t.ne[1]);
            const Type from = t.type;
            added = w.addTensor(t.name, type, shape, [=](uint8_t* dst, uint64_t) mutable -> Status {
                std::vector<Status> results(static_cast<size_t>(threads));
                std::atomic<bool> stop{false};
                auto work = [&](int k) {
                    std::vector<float> row(static_cast<size_t>(rowLen));
                    for (int64_t r = rows * k / threads; r < rows * (k + 1) / threads; ++r) {
                        if ((r & 15) == 0 && options.cancelled && options.cancelled()) stop = true;
                        if (stop) return;
                        Status s = dequantizeRow(from, data + uint64_t(r) * srcRow, row.data(), rowLen);
                        const float* imp = importance ? importance->data() + (r / rowsPerMatrix) * rowLen : nullptr;
                        if (s.isOk()) s = quantizeRowWeighted(type, row.data(), dst + uint64_t(r) * dstRow, rowLen, imp);
                        if (!s.isOk()) {
                            results[size_t(k)] = s;
                            stop = true;
                            return;
                        }
                    }
                };
                std::vector<std::thread> pool;
                for (int k = 1; k < threads; ++k) pool.emplace_back(work, k);
                work(0);
                for (auto& th : pool) th.join();
                for (const Status& s : results) HEARTH_RETURN_IF_ERROR(s);
                if (stop) return {ErrorCode::Cancelled, "quantization cancelled"};
                reportDone();
                return Status::ok();
            });
        }
        HEARTH_RETURN_IF_ERROR(added);
    }
    Status s = w.writeFile(out);
    if (s.code() == ErrorCode::Cancelled) return {ErrorCode::Cancelled, "quantization cancelled"};
    return s;
}

} // namespace hearth::quant
