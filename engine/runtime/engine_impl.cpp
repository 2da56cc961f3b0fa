// The engine thread: takes submitted and cancelled requests from an inbox, runs one scheduler step
// at a time (schedule -> batched forward -> sample -> update), and hands results to each
// request's sink. It alone owns the model, the KV cache and the scheduler.
#include "runtime/engine_impl.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "runtime/memory_budget.h"

#include <algorithm>
#include <cctype>

namespace hearth {

const char* finishReasonName(FinishReason r) {
    switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    }
    return "error";
}

quant::Type kvElementType(KvType t) {
    switch (t) {
    case KvType::F32: return quant::Type::F32;
    case KvType::F16: return quant::Type::F16;
    case KvType::Q8_0: return quant::Type::Q8_0;
    }
    return quant::Type::F16;
}

const char* kvTypeName(KvType t) {
    switch (t) {
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
    case KvType::F32: return "f32";
    }
    return "f16";
}

Result<KvType> kvTypeFromName(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (KvType t : {KvType::F16, KvType::Q8_0, KvType::F32})
        if (lower == kvTypeName(t)) return t;
    return invalidArgument("unknown KV cache type '" + std::string(name) + "' (f16, q8_0 or f32)");
}

Status SpeculationConfig::validate() const {
    if (maxDraft < 1 || maxDraft > 64) return invalidArgument("spec-max (drafts per step) must be between 1 and 64");
    if (minDraft < 0 || minDraft > maxDraft)
        return invalidArgument("spec-min (fewest drafts worth verifying) must be between 0 and spec-max");
    if (synthLength != 0.0 && !(synthLength >= 1.0 && synthLength <= maxDraft + 1.0))
        return invalidArgument("spec-synth-len must be between 1 and spec-max + 1 (" + std::to_string(maxDraft + 1) + ")");
    if (draft && draftModel.empty()) return invalidArgument("speculation with 'draft' needs a draft model (--draft-model FILE)");
    if (mtpVocab != 0 && (mtpVocab < 256 || mtpVocab > (1 << 24)))
        return invalidArgument("mtp-vocab (token ids the head drafts from) must be 0 (all) or between 256 and 16777216");
    if (!(pMin >= 0.0f && pMin <= 1.0f)) return invalidArgument("spec-p-min (a draft's least probability) must be between 0 and 1");
    if (mtp && !draftModel.empty())
        return invalidArgument("speculation takes a draft model or the model's multi-token prediction ('mtp'), not both");
    return Status::ok();
}

Status parseSpecTypes(std::string_view list, SpeculationConfig& config) {
    config.ngram = config.draft = config.mtp = false;
    size_t from = 0;
    while (from <= list.size()) {
        const size_t comma = std::min(list.find(',', from), list.size());
        const std::string_view name = list.substr(from, comma - from);
        if (name == "ngram") config.ngram = true;
        else if (name == "draft") config.draft = true;
        else if (name == "none" || name.empty()) {
        } else if (name == "mtp")
            config.mtp = true;
        else
            return invalidArgument("unknown speculation type '" + std::string(name) + "' (ngram, draft, mtp or none)");
        from = comma + 1;
    }
    return Status::ok();
}

namespace runtime {

EngineImpl::HeapRelease::~HeapRelease() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

EngineImpl::~EngineImpl() {
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable()) m_thread.join();
}

Result<std::unique_ptr<Engine>> EngineImpl::create(const EngineConfig& config) {
    HEARTH_RETURN_IF_ERROR(config.speculation.validate());
    auto e = std::unique_ptr<EngineImpl>(new EngineImpl());
    e->m_config = config;
    if (config.speculation.synthLength > 0.0) {
        HEARTH_ASSIGN_OR_RETURN(e->m_synthAccept,
                                spec::synthAcceptance(config.speculation.synthLength, config.speculation.maxDraft));
    }
    e->m_config.onLoadProgress = nullptr; // used during create() only
    auto progress = [&config](std::string stage, float fraction) {
        if (config.onLoadProgress) config.onLoadProgress(LoadProgress{std::move(stage), fraction});
    };
    progress("Reading the model file", 0.02f);
    gguf::ReadOptions readOptions;
    readOptions.useMmap = config.useMmap;
    HEARTH_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(config.modelPath, readOptions));
    e->m_file.emplace(std::move(file));
    model::ArchitectureOptions archOptions;
    archOptions.projector = !config.projectorPath.empty();
    HEARTH_ASSIGN_OR_RETURN(e->m_model, model::loadArchitecture(*e->m_file, archOptions));
    progress("Reading the tokenizer and chat template", 0.1f);
    Result<tokenizer::Tokenizer> tok = tokenizer::Tokenizer::fromGguf(*e->m_file);
    if (!tok) return tok.status().withContext("the model's tokenizer");
    e->m_tokenizer.emplace(std::move(*tok));
    Result<tmpl::ModelChat> chat = tmpl::modelChatFromGguf(*e->m_file);
    if (chat) e->m_chat.emplace(std::move(*chat));
    else e->m_chatError = chat.status();
    const model::ModelDims& dims = e->m_model->dims();

    ModelSummary& s = e->m_summary;
    s.architecture = dims.archName;
    s.name = e->m_file->has("general.name") ? e->m_file->getString("general.name").value() : "";
    s.nVocab = dims.nVocab;
    s.nLayer = dims.nLayer;
    s.nEmbd = dims.nEmbd;
    s.contextLength = config.contextLength > 0 ? config.contextLength
                                               : std::min(dims.nCtxTrain > 0 ? dims.nCtxTrain : 4096, 4096);
    // Learned positions end where the table does: no sequence goes further, whatever was asked.
    if (dims.maxPositions > 0) s.contextLength = std::min(s.contextLength, dims.maxPositions);
    for (int32_t id : e->m_tokenizer->eogTokens())
        if (id >= 0 && id < dims.nVocab) s.eogTokens.push_back(id);
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                            "tokenizer.ggml.eom_token_id"}) {
        auto id = e->m_file->getU32(key);
        if (id.isOk() && int64_t(*id) < dims.nVocab &&
            std::find(s.eogTokens.begin(), s.eogTokens.end(), int32_t(*id)) == s.eogTokens.end())
            s.eogTokens.push_back(int32_t(*id));
    }
    if (auto bos = e->m_file->getU32("tokenizer.ggml.bos_token_id"); bos.isOk() && *bos < uint32_t(dims.nVocab))
        s.bosToken = int32_t(*bos);
    s.chatTemplateBuiltin = e->m_chat && e->m_chat->builtin;
    s.embeddingsOnly = dims.embeddingsOnly;
    s.takesImages = dims.givenEmbeddings;
    e->m_imagesAtOnce = dims.imagesAtOnce;
    e->m_mrope = dims.mrope;
    // Embedding pooling: <arch>.pooling_type (0 none and absent: mean; 4 rank where the
    // architecture has the classification head).
    if (auto pt = e->m_file->getU32(dims.archName + ".pooling_type"); pt.isOk()) {
        if (*pt == 2) s.pooling = Pooling::Cls;
        else if (*pt == 3) s.pooling = Pooling::Last;
        else if (*pt == 4 && dims.rankOutputs > 0) s.pooling = Pooling::Rank;
        else if (*pt != 0 && *pt != 1) s.embeddings = false;
    }
    s.rankOutputs = s.pooling == Pooling::Rank ? dims.rankOutputs : 0;
    if (s.rankOutputs > 0)
        if (auto t = e->m_file->getString("tokenizer.chat_template.rerank"); t.isOk()) s.rankTemplate = *t;

    // The KV cache: a pool of blocks sized from the budget.
    const int bs = std::clamp(config.blockSize, 1, 1024);
    const uint64_t bytesPerBlock = uint64_t(bs) * kvBytesPerToken(dims, config.kvType);
    const uint64_t budget = config.kvMemoryBytes > 0
                                ? config.kvMemoryBytes
                                : autoKvBudget(bytesPerBlock, bs, s.contextLength, config.maxNumSeqs);
    // A model without attention layers (a recurrent-only cut) holds no K/V: its block tables only
    // number positions, enough for maxNumSeqs full contexts.
    const uint64_t blocks = bytesPerBlock ? budget / bytesPerBlock
                                          : uint64_t(std::max(1, config.maxNumSeqs)) *
                                                ((uint64_t(std::max(1, s.contextLength)) + uint64_t(bs) - 1) / uint64_t(bs));
    if (blocks < 1)
        return outOfMemory("KV memory budget of " + std::to_string(budget) +
                           " bytes holds no block (one needs " + std::to_string(bytesPerBlock) + ")");
    const int threads = config.threads > 0 ? config.threads
                                           : int(std::max(1u, std::thread::hardware_concurrency()));
    e->m_pool = std::make_unique<cpu::ThreadPool>(std::clamp(threads, 1, 256));
    // The model's steps: the first gpuLayers layers on the GPU of config.device, the rest on the
    // CPU, whose weights are repacked now, as part of loading, rather than by the first request.
    RunnerConfig rc;
    rc.device = config.referenceForward ? "ref" : config.device.empty() ? "cpu" : config.device;
    rc.gpuLayers = config.gpuLayers;
    rc.cpuMoeLayers = config.cpuMoeLayers;
    rc.kvType = config.kvType;
    rc.blockSize = bs;
    rc.numBlocks = int(std::min<uint64_t>(blocks, 1u << 20));
    rc.contextLength = s.contextLength;
    rc.pool = e->m_pool.get();
    // Hybrid models: a recurrent state per running sequence, and snapshots for the prefix cache.
    const uint64_t perState = dims.stateBytesPerSlot();
    if (perState > 0) {
        const int live = std::max(1, config.maxNumSeqs);
        const uint64_t liveBytes = perState * uint64_t(live), available = availableMemoryBytes();
        if (available > 0 && liveBytes > available / 2)
            return outOfMemory("the recurrent state of " + std::to_string(live) + " parallel sequences needs " +
                               std::to_string(liveBytes >> 20) + " MiB (" + std::to_string(perState >> 20) +
                               " MiB each), more than half of the " + std::to_string(available >> 20) +
                               " MiB available: lower the number of parallel sequences");
        rc.minStateSlots = live;
        rc.stateSlots = stateSlotsFor(perState, live, budget, config.stateMemoryBytes, config.prefixCaching, available);
    }
    rc.onWeights = [&progress](const std::string& device, int index, int count) {
        progress("Preparing the weights on " + device, 0.2f + 0.7f * float(index) / float(std::max(1, count)));
    };
    auto runner = ModelRunner::create(*e->m_model, rc);
    if (!runner) {
        if (rc.device != "cpu" && rc.device != "ref") return runner.status().withContext("device " + rc.device);
        return runner.status();
    }
    e->m_runner = std::move(runner).value();
    const int numBlocks = e->m_runner->numBlocks();
    if (!e->m_runner->deviceWarning().empty()) s.deviceNotes.push_back(e->m_runner->deviceWarning());
    if (rc.device != "cpu" && rc.device != "ref") {
        s.device = rc.device;
        s.gpuLayers = e->m_runner->gpuLayers();
        s.cpuMoeLayers = e->m_runner->cpuMoeLayers();
        for (const std::string& op : e->m_runner->fallbacks())
            s.deviceNotes.push_back(rc.device + " lacks " + op + ": it runs on the CPU");
    }
    progress("Setting up the KV cache", 0.92f);
    e->m_cache = std::make_unique<kv::KvCacheManager>(
        kv::KvCacheConfig{.numBlocks = numBlocks, .blockSize = bs, .prefixCaching = config.prefixCaching});
    if (e->m_runner->stateSlots() > 0)
        e->m_states = std::make_unique<kv::StateCache>(
            kv::StateCacheConfig{.numSlots = e->m_runner->stateSlots(), .prefixCaching = config.prefixCaching});
    e->m_sched = std::make_unique<sched::Scheduler>(
        sched::SchedulerConfig{.maxNumSeqs = std::max(1, config.maxNumSeqs),
                               .maxBatchedTokens = std::max(1, config.maxBatchedTokens),
                               .maxWaiting = std::max(0, config.maxWaiting),
                               .contextLength = s.contextLength,
                               .decodeStallFactor = std::max(0.0f, config.decodeStallFactor),
                               .snapshotEvery = std::max(1, config.stateSnapshotEvery)},
        *e->m_cache, e->m_states.get());
    s.kvType = kvTypeName(config.kvType);
    s.kvBytes = e->m_runner->kvBytes();
    s.stateBytes = e->m_runner->stateBytes();
    s.stateSlots = e->m_runner->stateSlots();
    s.kvBlockSize = bs;
    if (config.speculation.ngram) e->m_ngramPool = std::make_unique<spec::NgramPool>();
    // A draft model, or the model's own multi-token-prediction head, on the same terms.
    DraftModelConfig dc;
    dc.device = !config.speculation.draftDevice.empty() ? config.speculation.draftDevice : rc.device;
    dc.kvType = config.kvType;
    dc.contextLength = s.contextLength;
    dc.maxNumSeqs = std::max(1, config.maxNumSeqs);
    dc.pool = e->m_pool.get();
    if (!config.speculation.draftModel.empty() && s.speculationUnavailable.empty()) {
        progress("Loading the draft model", 0.95f);
        dc.path = config.speculation.draftModel;
        HEARTH_ASSIGN_OR_RETURN(e->m_draft, DraftModel::open(dc, *e->m_tokenizer));
        s.draftModel = e->m_draft->name();
    } else if (config.speculation.mtp && s.speculationUnavailable.empty()) {
        progress("Loading the multi-token-prediction head", 0.95f);
        dc.path = config.modelPath;
        dc.targetFile = &*e->m_file;
        dc.target = e->m_runner.get();
        dc.shortlist = config.speculation.mtpVocab;
        HEARTH_ASSIGN_OR_RETURN(e->m_draft, MtpDrafter::open(dc));
        s.draftModel = e->m_draft->name();
    }
    if (!config.projectorPath.empty()) {
        progress("Loading the vision projector", 0.97f);
        if (!s.takesImages)
            return invalidArgument("the model (" + s.architecture + ") does not take images; the projector " +
                                   config.projectorPath + " cannot serve it");
        VisionOptions vo;
        vo.device = config.device;
        vo.threads = threads;
        Result<std::unique_ptr<VisionEncoder>> vision = VisionEncoder::open(config.projectorPath, vo);
        if (!vision) return vision.status();
        HEARTH_RETURN_IF_ERROR(checkProjectorFor((*vision)->info(), config.modelPath));
        e->m_vision = std::move(vision).value();
        s.vision = true;
    }
    e->m_stats.kvBlocksTotal = numBlocks;
    e->m_numBlocks = numBlocks;
    e->m_thread = std::thread([raw = e.get()] { raw->run(); });
    return std::unique_ptr<Engine>(std::move(e));
}

Result<std::string> EngineImpl::renderChat(const tmpl::ChatRequest& request) const {
    if (!m_chat) return invalidArgument(m_chatError.message());
    Result<std::string> text = m_chat->render(request);
    if (!text) return invalidArgument(text.status().message());
    return text;
}

Result<std::vector<int32_t>> EngineImpl::encodeChat(const tmpl::ChatRequest& request) const {
    HEARTH_ASSIGN_OR_RETURN(std::string text, renderChat(request));
    return tmpl::encodeChatPrompt(*m_tokenizer, text);
}

// The encoder runs on the engine thread, between steps, so that it never competes with the
// decoding streams for the cores (on a CPU both would start a pool of threads on the same ones).
// The caller waits; a sink calling from the engine thread itself encodes at once.
Result<std::shared_ptr<const ImageEmbeddings>> EngineImpl::encodeImage(const Image& image) {
    if (!m_vision) return unsupported("no vision projector is loaded for this model");
    const uint64_t hash = imageHash(image);
    if (auto recent = recentImage(hash)) return recent;
    if (std::this_thread::get_id() == m_thread.get_id()) return encodeNow(image, hash);
    EncodeJob job;
    job.image = &image;
    job.hash = hash;
    std::future<Result<std::shared_ptr<const ImageEmbeddings>>> done = job.done.get_future();
    {
        std::lock_guard<std::mutex> lock(m_mu);
        if (m_stop) return Status(ErrorCode::Cancelled, "the engine is shutting down");
        m_encodeInbox.push_back(&job);
    }
    m_cv.notify_all();
    return done.get();
}

std::shared_ptr<const ImageEmbeddings> EngineImpl::recentImage(uint64_t hash) {
    std::lock_guard<std::mutex> lock(m_visionMu);
    for (const auto& recent : m_recentImages)
        if (recent->hash == hash) return recent;
    return nullptr;
}

Result<std::shared_ptr<const ImageEmbeddings>> EngineImpl::encodeNow(const Image& image, uint64_t hash) {
    if (auto recent = recentImage(hash)) return recent; // queued twice: encoded once
    const Clock::time_point start = Clock::now();
    HEARTH_ASSIGN_OR_RETURN(ImageEmbeddings e, m_vision->encode(image));
    ++m_imagesEncoded;
    m_imageEncodeSeconds += std::chrono::duration<double>(Clock::now() - start).count();
    auto out = std::make_shared<const ImageEmbeddings>(std::move(e));
    std::lock_guard<std::mutex> lock(m_visionMu);
    m_recentImages.push_back(out);
    constexpr size_t kRecentImages = 8;
    if (m_recentImages.size() > kRecentImages) m_recentImages.pop_front();
    return out;
}

Status EngineImpl::validateImages(const GenerationRequest& request) const {
    if (request.images.empty()) return Status::ok();
    if (!m_summary.takesImages)
        return invalidArgument("this model (" + m_summary.architecture + ") does not take images");
    int64_t end = 0;
    for (size_t i = 0; i < request.images.size(); ++i) {
        const PromptImage& im = request.images[i];
        const std::string name = "image " + std::to_string(i + 1);
        if (!im.embeddings || im.embeddings->tokens < 1) return invalidArgument(name + " has no embeddings");
        if (im.embeddings->width != m_summary.nEmbd ||
            int64_t(im.embeddings->values.size()) != im.embeddings->tokens * im.embeddings->width)
            return invalidArgument(name + "'s embeddings are " + std::to_string(im.embeddings->width) +
                                   " wide, the model's " + std::to_string(m_summary.nEmbd));
        if (im.at < end || int64_t(im.at) + im.embeddings->tokens > int64_t(request.prompt.size()))
            return invalidArgument(name + " overlaps another or lies outside the prompt");
        end = int64_t(im.at) + im.embeddings->tokens;
        // Its positions must hold its placeholder ids: the prefix cache knows it by them.
        const std::vector<int32_t> holders = imagePlaceholders(*im.embeddings, m_summary.nVocab);
        if (!std::equal(holders.begin(), holders.end(), request.prompt.begin() + im.at))
            return invalidArgument(name + ": the prompt does not hold its placeholder ids (imagePlaceholders) "
                                          "where it is placed");
    }
    return Status::ok();
}

Result<RequestId> EngineImpl::submit(GenerationRequest request) {
    if (!request.sink) return invalidArgument("request has no sink");
    if (m_summary.embeddingsOnly) return unsupported("this model computes embeddings only");
    if (request.prompt.empty()) return invalidArgument("the prompt is empty");
    if (request.maxTokens < 1) return invalidArgument("'max_tokens' must be at least 1");
    if (request.n < 1 || request.n > kMaxChoices)
        return invalidArgument("'n' must be between 1 and " + std::to_string(kMaxChoices));
    for (int32_t t : request.prompt)
        if (t < 0 || t >= m_summary.nVocab)
            return invalidArgument("prompt token " + std::to_string(t) + " is outside the vocabulary");
    for (int32_t t : request.stopTokens)
        if (t < 0 || t >= m_summary.nVocab)
            return invalidArgument("stop token " + std::to_string(t) + " is outside the vocabulary");
    HEARTH_RETURN_IF_ERROR(request.sampling.validate(m_summary.nVocab));
    HEARTH_RETURN_IF_ERROR(validateStopStrings(request.stopStrings));
    if (request.specMaxDraft < -1 || request.specMaxDraft > 64)
        return invalidArgument("'speculative.n_max' must be between 0 and 64");
    if (request.specMinDraft < -1 || request.specMinDraft > 64)
        return invalidArgument("'speculative.n_min' must be between 0 and 64");
    if (!(request.specPMin <= 1.0f)) return invalidArgument("'speculative.p_min' must be between 0 and 1");
    if (int64_t(request.prediction.size()) > m_summary.contextLength)
        return invalidArgument("'prediction' has " + std::to_string(request.prediction.size()) +
                               " tokens, more than the context length of " + std::to_string(m_summary.contextLength));
    for (int32_t t : request.prediction)
        if (t < 0 || t >= m_summary.nVocab)
            return invalidArgument("prediction token " + std::to_string(t) + " is outside the vocabulary");
    HEARTH_RETURN_IF_ERROR(validateImages(request));
    const int64_t total = int64_t(request.prompt.size()) + request.maxTokens;
    if (total > m_summary.contextLength)
        return outOfRange("prompt (" + std::to_string(request.prompt.size()) +
                          " tokens) + max_tokens (" + std::to_string(request.maxTokens) +
                          ") exceeds the context length of " + std::to_string(m_summary.contextLength));
    if (m_queued.load() >= m_config.maxWaiting + m_config.maxNumSeqs)
        return busy("the engine's queue is full; try again later");
    const RequestId id = m_nextId.fetch_add(1);
    ++m_queued;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_inbox.push_back({id, std::move(request), Clock::now()});
    }
    m_cv.notify_all();
    return id;
}

void EngineImpl::cancel(RequestId id) { // generation or embedding: the engine thread tells
    {
        std::lock_guard<std::mutex> lock(m_mu);
        m_cancels.push_back(id);
    }
    m_cv.notify_all();
}

void EngineImpl::admit(Submitted& s) {
    const int n = s.request.n;
    sched::Request r;
    r.id = schedId(s.id, 0);
    r.tokens = s.request.prompt;
    r.maxTokens = s.request.maxTokens;
    for (const PromptImage& im : s.request.images)
        r.images.push_back({int(im.at), int(im.embeddings->tokens)});
    r.imagesAtOnce = m_imagesAtOnce;
    if (!s.request.ignoreEos)
        r.stopTokens = s.request.stopTokens.empty() ? m_summary.eogTokens : s.request.stopTokens;
    const std::vector<int32_t> stopTokens = r.stopTokens;
    if (s.request.grammar && !m_trie) m_trie = grammar::TokenTrie::build(*m_tokenizer);
    Status st = m_sched->addRequest(std::move(r));
    if (!st.isOk()) {
        --m_queued;
        s.request.sink->onError(st);
        return;
    }
    Live live;
    live.sink = s.request.sink;
    live.submitted = s.at;
    live.returnLogits = s.request.returnLogits;
    live.promptTokens = int32_t(s.request.prompt.size());
    live.images = std::move(s.request.images);
    for (int c = 0; c < n; ++c) {
        Choice ch;
        SamplingParams sp = s.request.sampling;
        sp.seed += uint64_t(c);
        ch.sampler = std::make_unique<sample::Sampler>(sp);
        ch.text = std::make_unique<TextStream>(*m_tokenizer, s.request.stopStrings);
        if (s.request.grammar)
            ch.constraint = std::make_unique<grammar::GrammarConstraint>(s.request.grammar, m_trie, stopTokens);
        if (auto sc = speculatorFor(s.request, sp.seed)) {
            ch.spec = std::make_unique<spec::Speculator>(std::move(*sc));
            live.speculative = true;
        }
        live.choices.push_back(std::move(ch));
    }
    if (live.speculative) ++m_specRequests;
    m_live.emplace(s.id, std::move(live));
}

std::optional<spec::SpeculatorConfig> EngineImpl::speculatorFor(const GenerationRequest& request, uint64_t seed) const {
    const SpeculationConfig& sc = m_config.speculation;
    if (!m_summary.speculationUnavailable.empty() || request.specMaxDraft == 0) return std::nullopt;
    spec::SpeculatorConfig c;
    c.ngram = sc.ngram;
    c.adaptive = sc.adaptive;
    c.draftModel = m_draft != nullptr;
    c.pool = m_ngramPool.get();
    c.prediction = request.prediction;
    c.maxDraft = request.specMaxDraft > 0 ? request.specMaxDraft : sc.maxDraft;
    c.minDraft = std::min(c.maxDraft, request.specMinDraft >= 0 ? request.specMinDraft : sc.minDraft);
    c.pMin = request.specPMin >= 0.0f ? request.specPMin : sc.pMin;
    // Synthetic acceptance replaces the grammar's own choice of tokens: not with a grammar.
    if (!m_synthAccept.empty() && !request.grammar) {
        c.synthAccept = m_synthAccept;
        c.synthAccept.resize(size_t(std::min<int>(c.maxDraft, int(m_synthAccept.size()))));
    }
    c.seed = seed;
    if (!c.ngram && !c.draftModel && c.prediction.empty() && c.synthAccept.empty()) return std::nullopt;
    return c;
}

void EngineImpl::finishChoice(RequestId id, int choice, FinishReason reason, bool flushText) {
    auto it = m_live.find(id);
    if (it == m_live.end()) return;
    Live& live = it->second;
    Choice& ch = live.choices[size_t(choice)];
    if (ch.finished) return;
    ch.finished = true;
    ch.reason = reason;
    if (flushText) {
        TokenInfo tail;
        tail.choice = choice;
        tail.text = ch.text->finish();
        if (!tail.text.empty()) live.sink->onToken(tail);
    }
    const sched::RequestId sid = schedId(id, choice);
    if (m_draft) m_draft->release(sid);
    if (const sched::Request* r = m_sched->request(sid)) {
        if (choice == 0) live.cachedPromptTokens = r->numCachedPrompt;
        // Its text joins the shared n-grams that later requests draft from.
        if (m_ngramPool && !ch.generated.empty()) m_ngramPool->add(r->tokens);
        if (r->state != sched::RequestState::Finished) m_sched->finish(sid, toSched(reason));
        m_sched->release(sid);
    }
    live.sink->onChoiceFinish(choice, reason, ch.text ? ch.text->matchedStop() : std::string());
    if (++live.numFinished < int(live.choices.size())) return;

    Usage u;
    u.promptTokens = live.promptTokens;
    u.cachedPromptTokens = live.cachedPromptTokens;
    for (const Choice& c : live.choices) {
        u.completionTokens += int32_t(c.generated.size());
        if (!c.spec) continue;
        u.draftTokens += c.spec->drafted();
        u.acceptedDraftTokens += c.spec->accepted();
        u.predictionDraftTokens += c.spec->predictionDrafted();
        u.acceptedPredictionTokens += c.spec->predictionAccepted();
    }
    if (live.speculative) --m_specRequests;
    const auto now = Clock::now();
    if (live.scheduled) u.queueMs = msBetween(live.submitted, live.firstScheduled);
    if (live.produced) {
        u.timeToFirstTokenMs = msBetween(live.submitted, live.firstToken);
        u.generationMs = msBetween(live.firstToken, now);
    }
    std::shared_ptr<TokenSink> sink = std::move(live.sink);
    const FinishReason first = live.choices[0].reason;
    m_live.erase(it);
    --m_queued;
    sink->onFinish(first, u);
}

void EngineImpl::cancelLive(RequestId id) {
    auto it = m_live.find(id);
    if (it == m_live.end()) return;
    const int n = int(it->second.choices.size());
    for (int c = 0; c < n && m_live.count(id); ++c) finishChoice(id, c, FinishReason::Cancelled, true);
}

void EngineImpl::failAll(const Status& error) {
    failEmbeds(error);
    for (auto& [id, live] : m_live) {
        for (size_t c = 0; c < live.choices.size(); ++c) {
            const sched::RequestId sid = schedId(id, int(c));
            if (m_draft) m_draft->release(sid);
            m_sched->cancel(sid);
            m_sched->release(sid);
        }
        --m_queued;
        live.sink->onError(error);
    }
    m_live.clear();
    m_specRequests = 0;
}

void EngineImpl::run() {
    for (;;) {
        std::deque<Submitted> inbox;
        std::vector<RequestId> cancels;
        std::deque<std::pair<RequestId, EmbeddingRequest>> embeds;
        std::deque<Clock::time_point> embedsAt;
        EncodeJob* encode = nullptr;
        {
            std::unique_lock<std::mutex> lock(m_mu);
            m_cv.wait(lock, [&] {
                return m_stop || !m_inbox.empty() || !m_cancels.empty() || !m_embedInbox.empty() ||
                       !m_encodeInbox.empty() || m_sched->hasWork() || embedPending();
            });
            if (m_stop) break;
            if (!m_encodeInbox.empty()) {
                encode = m_encodeInbox.front();
                m_encodeInbox.pop_front();
            }
            inbox.swap(m_inbox);
            cancels.swap(m_cancels);
            embeds.swap(m_embedInbox);
            embedsAt.swap(m_embedInboxAt);
        }
        for (Submitted& s : inbox) admit(s);
        for (size_t k = 0; k < embeds.size(); ++k)
            admitEmbed(embeds[k].first, std::move(embeds[k].second), embedsAt[k]);
        for (RequestId id : cancels) {
            cancelLive(id);
            cancelEmbed(id, Status(ErrorCode::Cancelled, "the embedding request was cancelled"));
        }
        feedEmbeddings();
        // One image per turn, so that the streams still step between a queue of images.
        if (encode) encode->done.set_value(encodeNow(*encode->image, encode->hash));
        if (m_sched->hasWork()) {
            Status st = step();
            if (!st.isOk()) failAll(st); // a failed step fails its requests, never the process
        }
        publishStats();
    }
    std::vector<RequestId> ids;
    for (const auto& [id, live] : m_live) ids.push_back(id);
    for (RequestId id : ids) cancelLive(id);
    const Status closing(ErrorCode::Cancelled, "the engine is shutting down");
    failEmbeds(closing);
    std::deque<std::pair<RequestId, EmbeddingRequest>> embeds;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        embeds.swap(m_embedInbox);
    }
    for (auto& [id, r] : embeds) r.sink->onError(closing);
    std::deque<EncodeJob*> encodes;
    {
        std::lock_guard<std::mutex> lock(m_mu);
        encodes.swap(m_encodeInbox);
    }
    for (EncodeJob* job : encodes) job->done.set_value(closing);
}

void EngineImpl::publishStats() {
    std::lock_guard<std::mutex> lock(m_statsMu);
    m_stats.running = m_sched->numRunning();
    m_stats.waiting = m_sched->numWaiting();
    m_stats.kvBlocksUsed = m_cache->numUsedBlocks();
    m_stats.kvBlocksTotal = m_cache->numBlocks();
    m_stats.kvTokensHeld = m_sched->tokensHeld();
    m_stats.prefillTokensComputed = m_sched->prefillTokensComputed();
    m_stats.prefixQueryTokens = m_cache->prefixQueryTokens();
    m_stats.prefixHitTokens = m_cache->prefixHitTokens();
    m_stats.draftTokens = m_draftTokens;
    m_stats.acceptedDraftTokens = m_acceptedDraftTokens;
    m_stats.imagesEncoded = m_imagesEncoded;
    m_stats.imageEncodeSeconds = m_imageEncodeSeconds;
    m_stats.draftKvBlocksUsed = m_draft ? m_draft->numBlocks() - m_draft->numFreeBlocks() : 0;
    m_stats.stepBufferBytes = m_runner ? m_runner->hostActivationBytes() : 0;
    if (m_states) {
        m_stats.stateSlotsTotal = m_states->numSlots();
        m_stats.stateSlotsLive = m_states->numLive();
        m_stats.stateSnapshots = m_states->numSnapshots();
    }
}

} // namespace runtime

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
    return runtime::EngineImpl::create(config);
}

} // namespace hearth
