// VisionEncoder: a projector file's vision tower (model/siglip.cpp, model/gemma4_vision.cpp,
// model/qwen3vl_vision.cpp, model/pixtral.cpp, model/clip_mlp.cpp) run by a ModelRunner on the
// chosen device, one image per step, after the preprocessing llama.cpp's mtmd applies to it;
// Pixtral's [IMG_BREAK] rows put after each row of its embeddings but the last, as mtmd's graph
// puts them.
#include "hearth/vision.h"

#include "backend/cpu/thread_pool.h"
#include "graph/step.h"
#include "hearth/gguf.h"
#include "hearth/quant.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "vision/qwen_vision_input.h"

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
    int positionRows = 0;       // Gemma 4: rows of each position table (a grid's longest side at most)
    vision::PositionTable positions; // Qwen3-VL: the learned positions, resized to each image's grid
    std::vector<float> rowBreak; // Pixtral: the [IMG_BREAK] embedding (v.token_embd.img_break), if any
};

namespace {

// Pixtral's v.token_embd.img_break as floats, if the file has it (it must be the text's width).
Result<std::vector<float>> readRowBreak(const gguf::File& file, int width) {
    const gguf::TensorInfo* t = file.findTensor("v.token_embd.img_break");
    if (!t) return std::vector<float>{};
    if (t->elements() != uint64_t(width))
        return invalidFormat("tensor 'v.token_embd.img_break' must have " + std::to_string(width) + " values (it is " +
                             t->shapeString() + ")");
    const uint8_t* data = file.tensorData(*t);
    if (!data) return invalidFormat("tensor 'v.token_embd.img_break' has no data");
    std::vector<float> v(static_cast<size_t>(width));
    HEARTH_RETURN_IF_ERROR(quant::dequantizeRow(t->type, data, v.data(), width));
    return v;
}

// Pixtral: e's rows of `perRow` embeddings each followed by the [IMG_BREAK] embedding, but the last.
void withRowBreaks(ImageEmbeddings& e, int64_t perRow, const std::vector<float>& rowBreak) {
    const size_t width = size_t(e.width);
    const int64_t rows = perRow > 0 ? e.tokens / perRow : 0;
    if (rows < 2) return;
    std::vector<float> out;
    out.reserve(size_t(e.tokens + rows - 1) * width);
    for (int64_t r = 0; r < rows; ++r) {
        const auto first = e.values.begin() + std::ptrdiff_t(size_t(r * perRow) * width);
        out.insert(out.end(), first, first + std::ptrdiff_t(size_t(perRow) * width));
        if (r + 1 < rows) out.insert(out.end(), rowBreak.begin(), rowBreak.end());
    }
    e.values = std::move(out);
    e.tokens += rows - 1;
}

} // namespace

VisionEncoder::VisionEncoder(std::unique_ptr<Impl> impl) : m(std::move(impl)) {}
VisionEncoder::~VisionEncoder() = default;

const ProjectorInfo& VisionEncoder::info() const { return m->info; }
const std::string& VisionEncoder::deviceId() const { return m->runner->deviceId(); }

Result<std::unique_ptr<VisionEncoder>> VisionEncoder::open(const std::string& path, const VisionOptions& options) {
    auto impl = std::make_unique<Impl>();
    HEARTH_ASSIGN_OR_RETURN(impl->info, readProjector(path));
    if (impl->info.type != "gemma3" && impl->info.type != "gemma4v" && impl->info.type != "qwen3vl_merger" &&
        impl->info.type != "pixtral" && impl->info.type != "mlp")
        return unsupported("projector " + path + ": Hearth does not encode images for " + impl->info.family +
                           " (projector type '" + impl->info.type +
                           "') yet; Gemma 3's, Gemma 4's, Qwen3-VL's, Pixtral (Mistral 3) and LLaVA's CLIP are "
                           "supported");
    Result<gguf::File> file = gguf::File::open(path);
    if (!file) return file.status().withContext("projector " + path);
    impl->file = std::make_unique<gguf::File>(std::move(file).value());
    Result<std::unique_ptr<model::Architecture>> tower = model::loadVisionTower(*impl->file);
    if (!tower) return tower.status().withContext("projector " + path);
    impl->tower = std::move(tower).value();
    if (const gguf::TensorInfo* pos = impl->file->findTensor("v.position_embd.weight");
        pos && impl->info.type == "gemma4v" && pos->nDims == 3)
        impl->positionRows = int(pos->ne[1]);
    if (impl->info.type == "qwen3vl_merger") {
        Result<vision::PositionTable> table = vision::readPositionTable(*impl->file);
        if (!table) return table.status().withContext("projector " + path);
        impl->positions = std::move(table).value();
    }
    if (impl->info.type == "pixtral") {
        HEARTH_ASSIGN_OR_RETURN(impl->rowBreak, readRowBreak(*impl->file, impl->tower->dims().nEmbd));
    }

    const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    impl->pool = std::make_unique<cpu::ThreadPool>(std::clamp(threads, 1, 256));
    const int side = impl->info.imageSize / impl->info.patchSize;
    const int64_t merged = int64_t(impl->info.merge) * impl->info.merge;
    const int patches = (impl->info.maxTokens > 0 ? int(impl->info.maxTokens * merged) : side * side) +
                        (impl->info.type == "mlp" ? 1 : 0); // LLaVA's class token
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
    const PatchGrid grid = patchGrid(p, image.width, image.height);
    if (grid.columns < 1 || grid.rows < 1) return invalidArgument("the image is empty");
    const int P = p.patchSize, W = grid.columns * P, H = grid.rows * P;
    const bool gemma4 = p.type == "gemma4v";
    // mtmd pads LLaVA's images with its mean colour, the others' with black.
    const std::array<uint8_t, 3> pad = p.type == "mlp" ? std::array<uint8_t, 3>{122, 116, 104}
                                                       : std::array<uint8_t, 3>{0, 0, 0};
    HEARTH_ASSIGN_OR_RETURN(const Image fitted,
                            fitImage(image, W, H, p.type == "gemma3" ? ResizeFilter::Bilinear : ResizeFilter::Bicubic,
                                     pad));
    std::vector<float> out(size_t(W) * size_t(H) * 3);
    float* o = out.data();
    for (int py = 0; py < grid.rows; ++py)
        for (int px = 0; px < grid.columns; ++px)
            for (int c = 0; c < 3; ++c)
                for (int y = 0; y < P; ++y)
                    for (int x = 0; x < P; ++x) {
                        const uint8_t v = fitted.rgb[(size_t(py * P + y) * size_t(W) + size_t(px * P + x)) * 3 + size_t(c)];
                        const float n = (float(v) / 255.0f - p.mean[size_t(c)]) / p.std[size_t(c)];
                        *o++ = gemma4 ? n * 2.0f - 1.0f : n;
                    }
    return out;
}

Result<ImageEmbeddings> VisionEncoder::encode(const Image& image) {
    HEARTH_ASSIGN_OR_RETURN(const std::vector<float> pixels, patches(image));
    const ProjectorInfo& p = m->info;
    const PatchGrid grid = patchGrid(p, image.width, image.height);
    const int64_t n = int64_t(grid.columns) * grid.rows, rowWidth = 3 * int64_t(p.patchSize) * p.patchSize;
    const int merge = std::max(1, p.merge);
    const int64_t tokens = (grid.columns / merge) * int64_t(grid.rows / merge);
    if (m->positionRows > 0 && std::max(grid.columns, grid.rows) > m->positionRows)
        return invalidArgument("the image is " + std::to_string(grid.columns) + " x " + std::to_string(grid.rows) +
                               " patches; the encoder's position tables hold " + std::to_string(m->positionRows));
    // Which patch (row-major) each token of the step is. Gemma 3's tower pools row-major patches
    // itself; Gemma 4's takes them by offset within their pooling square, then by square
    // (model/gemma4_vision.cpp), Pixtral's merger each square's patches together, by square then
    // offset (model/pixtral.cpp): their attention, not causal, does not see the order.
    std::vector<int64_t> order(static_cast<size_t>(n));
    const bool pixtral = p.type == "pixtral";
    const bool bySquare = p.type == "gemma4v" || (pixtral && merge > 1);
    const int64_t squaresX = grid.columns / merge, mm = int64_t(merge) * merge;
    for (int64_t i = 0; i < n; ++i) {
        if (!bySquare) {
            order[size_t(i)] = i;
            continue;
        }
        // offset (dy, dx) in the square, the square
        const int64_t k = pixtral ? i % mm : i / tokens, s = pixtral ? i / mm : i % tokens;
        const int64_t y = (s / squaresX) * merge + k / merge, x = (s % squaresX) * merge + k % merge;
        order[size_t(i)] = y * grid.columns + x;
    }
    // LLaVA's class token follows the patches (model/clip_mlp.cpp); its pixel row is unused.
    const bool withClass = p.type == "mlp";
    std::vector<float> ordered;
    const bool qwen = p.type == "qwen3vl_merger";
    if (qwen) {
        // Qwen3-VL: 2 x 2 squares in turn, each patch's position row beside its pixels.
        if (grid.columns % 2 != 0 || grid.rows % 2 != 0)
            return internalError("a Qwen3-VL patch grid must have even sides");
        const std::vector<float> positions = vision::resizePositions(m->positions, grid.columns, grid.rows);
        ordered = vision::squareOrderRows(pixels, rowWidth, positions, m->positions.width, grid.columns, grid.rows);
        for (int64_t i = 0; i < n; ++i) order[size_t(i)] = vision::squareOrderPatch(i, grid.columns);
    } else if (withClass) {
        ordered = pixels;
        ordered.resize(pixels.size() + size_t(rowWidth), 0.0f);
    } else if (bySquare) {
        ordered.resize(pixels.size());
        for (int64_t i = 0; i < n; ++i)
            std::copy_n(pixels.begin() + order[size_t(i)] * rowWidth, rowWidth, ordered.begin() + i * rowWidth);
    }
    graph::Batch batch;
    batch.tokens.resize(size_t(n + (withClass ? 1 : 0)));
    for (int64_t i = 0; i < int64_t(batch.tokens.size()); ++i) {
        graph::BatchToken& t = batch.tokens[size_t(i)];
        t.pos = int32_t(i);
        if (i < n) {
            t.gridX = int32_t(order[size_t(i)] % grid.columns);
            t.gridY = int32_t(order[size_t(i)] / grid.columns);
        }
        // The pooled rows are the first ones; mtmd takes LLaVA's rows 1..n (the class token last).
        t.wantHidden = withClass ? i >= 1 : i < tokens;
    }
    batch.blockTables.push_back(m->table);
    batch.hiddenIn = bySquare || qwen || withClass ? std::span<const float>(ordered) : std::span<const float>(pixels);
    batch.hiddenWidth = qwen ? rowWidth + m->positions.width : rowWidth;
    std::vector<float> logits;
    ImageEmbeddings e;
    HEARTH_RETURN_IF_ERROR(m->runner->forward(batch, logits, &e.values));
    e.width = m->tower->dims().nEmbd;
    e.columns = grid.columns / merge;
    e.hash = imageHash(image);
    e.tokens = e.width > 0 ? int64_t(e.values.size()) / e.width : 0;
    if (e.tokens != tokens)
        return internalError("the vision encoder gave " + std::to_string(e.tokens) + " embeddings, not " +
                             std::to_string(tokens));
    if (!m->rowBreak.empty()) withRowBreaks(e, grid.columns / merge, m->rowBreak);
    return e;
}

} // namespace hearth
