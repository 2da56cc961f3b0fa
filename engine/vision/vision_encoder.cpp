// VisionEncoder: a projector file's vision tower (model/siglip.cpp) run by a ModelRunner on the
// chosen device, one image per step, after the preprocessing llama.cpp's mtmd applies to it.
#include "hearth/vision.h"

#include "backend/cpu/thread_pool.h"
#include "graph/step.h"
#include "hearth/gguf.h"
#include "model/arch.h"
#include "runtime/model_runner.h"

#include <algorithm>
#include <thread>

namespace hearth {

struct VisionEncoder::Impl {
    ProjectorInfo info;
    std::unique_ptr<gguf::File> file;
    std::unique_ptr<model::Architecture> tower;
    std::unique_ptr<cpu::ThreadPool> pool;
    std::unique_ptr<runtime::ModelRunner> runner;
    std::vector<int32_t> table; // the image's block table: every block, in order
};

VisionEncoder::VisionEncoder(std::unique_ptr<Impl> impl) : m(std::move(impl)) {}
VisionEncoder::~VisionEncoder() = default;

const ProjectorInfo& VisionEncoder::info() const { return m->info; }
const std::string& VisionEncoder::deviceId() const { return m->runner->deviceId(); }

Result<std::unique_ptr<VisionEncoder>> VisionEncoder::open(const std::string& path, const VisionOptions& options) {
    auto impl = std::make_unique<Impl>();
    HEARTH_ASSIGN_OR_RETURN(impl->info, readProjector(path));
    if (impl->info.type != "gemma3")
        return unsupported("projector " + path + ": Hearth does not encode images for " + impl->info.family +
                           " (projector type '" + impl->info.type + "') yet; Gemma 3's SigLIP is supported");
    Result<gguf::File> file = gguf::File::open(path);
    if (!file) return file.status().withContext("projector " + path);
    impl->file = std::make_unique<gguf::File>(std::move(file).value());
    Result<std::unique_ptr<model::Architecture>> tower = model::loadVisionTower(*impl->file);
    if (!tower) return tower.status().withContext("projector " + path);
    impl->tower = std::move(tower).value();

    const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    impl->pool = std::make_unique<cpu::ThreadPool>(std::clamp(threads, 1, 256));
    const int side = impl->info.imageSize / impl->info.patchSize;
    const int patches = side * side;
    runtime::RunnerConfig rc;
    rc.device = options.device;
    rc.gpuLayers = -1;
    rc.kvType = KvType::F32; // llama.cpp's encoders keep K and V in fp32
    rc.blockSize = 16;
    rc.numBlocks = (patches + rc.blockSize - 1) / rc.blockSize;
    rc.contextLength = patches;
    rc.pool = impl->pool.get();
    Result<std::unique_ptr<runtime::ModelRunner>> runner = runtime::ModelRunner::create(*impl->tower, rc);
    if (!runner) return runner.status().withContext("vision encoder on " + options.device);
    impl->runner = std::move(runner).value();
    if (impl->runner->numBlocks() < rc.numBlocks)
        return outOfMemory("device " + options.device + " holds " + std::to_string(impl->runner->numBlocks()) +
                           " of the encoder's " + std::to_string(rc.numBlocks) + " K/V blocks");
    impl->table.resize(size_t(rc.numBlocks));
    for (size_t i = 0; i < impl->table.size(); ++i) impl->table[i] = int32_t(i);
    return std::unique_ptr<VisionEncoder>(new VisionEncoder(std::move(impl)));
}

Result<std::vector<float>> VisionEncoder::patches(const Image& image) const {
    const ProjectorInfo& p = m->info;
    HEARTH_ASSIGN_OR_RETURN(const Image square, fitImage(image, p.imageSize, p.imageSize, ResizeFilter::Bilinear));
    const int P = p.patchSize, S = p.imageSize / P, N = p.imageSize;
    std::vector<float> out(size_t(S) * size_t(S) * 3 * size_t(P) * size_t(P));
    float* o = out.data();
    for (int py = 0; py < S; ++py)
        for (int px = 0; px < S; ++px)
            for (int c = 0; c < 3; ++c)
                for (int y = 0; y < P; ++y)
                    for (int x = 0; x < P; ++x) {
                        const uint8_t v = square.rgb[(size_t(py * P + y) * size_t(N) + size_t(px * P + x)) * 3 + size_t(c)];
                        *o++ = (float(v) / 255.0f - p.mean[size_t(c)]) / p.std[size_t(c)];
                    }
    return out;
}

Result<ImageEmbeddings> VisionEncoder::encode(const Image& image) {
    HEARTH_ASSIGN_OR_RETURN(const std::vector<float> pixels, patches(image));
    const ProjectorInfo& p = m->info;
    const int S = p.imageSize / p.patchSize;
    const int64_t n = int64_t(S) * S, rowWidth = 3 * int64_t(p.patchSize) * p.patchSize;
    graph::Batch batch;
    batch.tokens.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
        graph::BatchToken& t = batch.tokens[size_t(i)];
        t.pos = int32_t(i);
        t.wantHidden = i < p.tokensPerImage; // the pooled rows are the first tokensPerImage
    }
    batch.blockTables.push_back(m->table);
    batch.hiddenIn = pixels;
    batch.hiddenWidth = rowWidth;
    std::vector<float> logits;
    ImageEmbeddings e;
    HEARTH_RETURN_IF_ERROR(m->runner->forward(batch, logits, &e.values));
    e.width = m->tower->dims().nEmbd;
    e.hash = imageHash(image);
    e.tokens = e.width > 0 ? int64_t(e.values.size()) / e.width : 0;
    if (e.tokens != p.tokensPerImage)
        return internalError("the vision encoder gave " + std::to_string(e.tokens) + " embeddings, not " +
                             std::to_string(p.tokensPerImage));
    return e;
}

} // namespace hearth
