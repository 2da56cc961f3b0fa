// `hearth-cli run`: tokenizes a prompt, generates with the engine and streams the text, like
// llama.cpp's CLI; optionally prints the token ids and dumps every step's logits.
#include "commands.h"

#include "hearth/engine.h"
#include "hearth/gguf.h"
#include "hearth/image.h"
#include "hearth/projector.h"
#include "hearth/tokenizer.h"
#include "hearth/vision.h"

#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <string>

namespace hearth::cli {

namespace {

const char* kRunHelp =
    "usage: hearth-cli run MODEL.gguf -p PROMPT [options]\n"
    "  -p, --prompt TEXT     the prompt (special tokens like <|im_start|> are recognised)\n"
    "  -n, --n-predict N     tokens to generate (default 128)\n"
    "  --temp T              temperature; 0 = greedy (default 0.8)\n"
    "  --top-k K --top-p P --min-p P   sampling filters (defaults 40, 0.95, 0.05)\n"
    "  --seed S              random seed (default: random)\n"
    "  --ctx N               context length (default: min(model, 4096))\n"
    "  -t, --threads N       compute threads (default: all cores)\n"
    "  --chat                apply the model's chat template to the prompt as one user message\n"
    "  --mmproj PROJ.gguf    the model's vision projector (llama.cpp's --mmproj files); with\n"
    "                        --image and without it, the *mmproj*.gguf beside the model that fits\n"
    "  --image FILE          an image (PNG, JPEG, WebP, GIF; repeatable) where the prompt says\n"
    "                        <__media__>, else before the prompt\n"
    "  --stop TEXT           end generation before TEXT (may be given several times)\n"
    "  --kv-type T           KV cache type: f16 (default), q8_0, f32\n"
    "  --kv-memory SIZE      KV cache budget, e.g. 512M or 2G (default: automatic)\n"
    "  --no-mmap             read the model into memory at load instead of mapping the file\n"
    "  --device ID           cpu (default) or a GPU from 'hearth-cli devices' (vulkan:0, ...)\n"
    "  -ngl, --gpu-layers N  with --device: layers on the GPU, the rest on the CPU (default: all)\n"
    "  --cpu-moe             with --device: every layer's MoE expert weights stay in RAM and the\n"
    "                        experts run on the CPU (attention and the K/V cache on the GPU)\n"
    "  --n-cpu-moe N         the same for the first N layers only\n"
    "  --spec LIST           speculative decoding: ngram (drafts from the text so far), draft\n"
    "                        (a draft model), mtp (the model's multi-token-prediction head)\n"
    "                        or none; e.g. ngram,draft\n"
    "  --draft-model FILE    the draft model: a smaller GGUF with the same vocabulary\n"
    "  --spec-max N          drafts per step at most (default 8); --spec-min N: fewest worth it\n"
    "  --spec-p-min P        a draft or mtp model stops drafting below probability P (default 0)\n"
    "  --mtp-vocab N         the mtp head drafts from the first N token ids (default 32768; 0: all)\n"
    "  --spec-synth-len L    synthetic acceptance of mean length L (benchmarks; output not valid)\n"
    "  --prediction TEXT     the expected output (drafted from; the answer is unchanged)\n"
    "  --prediction-file F   the same, read from a file\n"
    "  --ignore-eos          keep generating after an end-of-generation token\n"
    "  --print-ids           end with 'prompt ids: ...' and 'generated ids: ...' lines\n"
    "  --logits-out FILE     write float32 logits [steps, n_vocab] of every generated token\n";

template <typename T> bool parseNumber(std::string_view s, T& out) {
    if constexpr (std::is_floating_point_v<T>) {
        try {
            size_t used = 0;
            const double v = std::stod(std::string(s), &used);
            if (used != s.size()) return false;
            out = T(v);
            return true;
        } catch (...) {
            return false;
        }
    } else {
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        return ec == std::errc() && p == s.data() + s.size();
    }
}

// Prints text as it comes and remembers ids and logits; the engine calls it on its thread.
class PrintingSink : public TokenSink {
public:
    explicit PrintingSink(bool keepLogits) : m_keepLogits(keepLogits) {}

    void onToken(const TokenInfo& t) override {
        if (!t.text.empty()) {
            std::fwrite(t.text.data(), 1, t.text.size(), stdout);
            std::fflush(stdout);
        }
        if (t.id < 0) return; // a text-only tail piece
        std::lock_guard<std::mutex> lock(m_mu);
        ids.push_back(t.id);
        if (m_keepLogits) logits.insert(logits.end(), t.logits.begin(), t.logits.end());
    }
    void onFinish(FinishReason r, const Usage& u) override {
        std::lock_guard<std::mutex> lock(m_mu);
        reason = r;
        usage = u;
        done = true;
        m_cv.notify_all();
    }
    void onError(const Status& s) override {
        std::lock_guard<std::mutex> lock(m_mu);
        error = s;
        done = true;
        m_cv.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> lock(m_mu);
        m_cv.wait(lock, [&] { return done; });
    }

    std::vector<int32_t> ids;
    std::vector<float> logits;
    FinishReason reason = FinishReason::Error;
    Usage usage;
    Status error;
    bool done = false;

private:
    bool m_keepLogits;
    std::mutex m_mu;
    std::condition_variable m_cv;
};

void printIds(const char* label, const std::vector<int32_t>& ids) {
    std::printf("%s:", label);
    for (int32_t id : ids) std::printf(" %d", id);
    std::printf("\n");
}

// The images' embeddings from the engine's vision projector, in order; errors name the file.
Result<std::vector<PromptImage>> encodeImages(Engine& engine, const std::vector<std::string>& paths) {
    std::vector<PromptImage> images;
    for (const std::string& path : paths) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return ioError("cannot read the image " + path);
        const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        Result<Image> image = decodeImage(bytes);
        if (!image) return image.status().withContext(path);
        Result<std::shared_ptr<const ImageEmbeddings>> e = engine.encodeImage(*image);
        if (!e) return e.status().withContext(path);
        images.push_back(PromptImage{0, std::move(e).value()});
    }
    return images;
}

} // namespace

int runRun(Args args) {
    std::string modelPath, prompt, logitsOut;
    bool havePrompt = false, printIdsFlag = false, ignoreEos = false, chat = false, useMmap = true;
    int32_t nPredict = 128, ctx = 0, threads = 0, gpuLayers = -1, cpuMoeLayers = 0;
    std::string device = "cpu";
    std::vector<std::string> stops;
    KvType kvType = KvType::F16;
    uint64_t kvMemory = 0;
    SpeculationConfig spec;
    std::string prediction;
    bool havePrediction = false;
    std::string projectorPath;
    std::vector<std::string> imagePaths;
    SamplingParams sp;
    sp.temperature = 0.8f;
    sp.topK = 40;
    sp.topP = 0.95f;
    sp.minP = 0.05f;
    sp.seed = std::random_device{}();
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        auto value = [&](std::string_view& out) {
            if (i + 1 >= args.size()) return false;
            out = args[++i];
            return true;
        };
        std::string_view v;
        bool ok = true;
        if (a == "-h" || a == "--help") {
            std::fputs(kRunHelp, stdout);
            return 0;
        } else if (a == "-p" || a == "--prompt") {
            ok = value(v);
            prompt = std::string(v);
            havePrompt = true;
        } else if (a == "-n" || a == "--n-predict") {
            ok = value(v) && parseNumber(v, nPredict);
        } else if (a == "--temp") {
            ok = value(v) && parseNumber(v, sp.temperature);
        } else if (a == "--top-k") {
            ok = value(v) && parseNumber(v, sp.topK);
        } else if (a == "--top-p") {
            ok = value(v) && parseNumber(v, sp.topP);
        } else if (a == "--min-p") {
            ok = value(v) && parseNumber(v, sp.minP);
        } else if (a == "--seed") {
            ok = value(v) && parseNumber(v, sp.seed);
        } else if (a == "--ctx" || a == "-c") {
            ok = value(v) && parseNumber(v, ctx);
        } else if (a == "--threads" || a == "-t") {
            ok = value(v) && parseNumber(v, threads) && threads >= 0;
        } else if (a == "--chat") {
            chat = true;
        } else if (a == "--stop") {
            ok = value(v);
            stops.emplace_back(v);
        } else if (a == "--kv-type") {
            Result<KvType> t = value(v) ? kvTypeFromName(v) : Result<KvType>(invalidArgument(""));
            ok = t.isOk();
            if (ok) kvType = *t;
        } else if (a == "--kv-memory") {
            ok = value(v) && parseByteSize(v, kvMemory);
        } else if (a == "--no-mmap") {
            useMmap = false;
        } else if (a == "--device") {
            ok = value(v) && !v.empty();
            device = std::string(v);
        } else if (a == "-ngl" || a == "--gpu-layers") {
            ok = value(v) && parseNumber(v, gpuLayers) && gpuLayers >= -1;
        } else if (a == "--cpu-moe") {
            cpuMoeLayers = -1;
        } else if (a == "--n-cpu-moe") {
            ok = value(v) && parseNumber(v, cpuMoeLayers) && cpuMoeLayers >= 0;
        } else if (a == "--spec") {
            ok = value(v);
            if (ok) {
                if (Status st = parseSpecTypes(v, spec); !st.isOk()) {
                    std::fprintf(stderr, "hearth-cli run: %s\n", st.message().c_str());
                    return 2;
                }
            }
        } else if (a == "--draft-model" || a == "-md") {
            ok = value(v) && !v.empty();
            spec.draftModel = std::string(v);
        } else if (a == "--spec-max") {
            ok = value(v) && parseNumber(v, spec.maxDraft);
        } else if (a == "--spec-min") {
            ok = value(v) && parseNumber(v, spec.minDraft);
        } else if (a == "--spec-p-min" || a == "--draft-p-min") {
            ok = value(v) && parseNumber(v, spec.pMin);
        } else if (a == "--mtp-vocab") {
            ok = value(v) && parseNumber(v, spec.mtpVocab);
        } else if (a == "--spec-synth-len") {
            ok = value(v) && parseNumber(v, spec.synthLength);
        } else if (a == "--prediction") {
            ok = value(v);
            prediction = std::string(v);
            havePrediction = true;
        } else if (a == "--prediction-file") {
            ok = value(v);
            if (ok) {
                std::ifstream in{std::string(v), std::ios::binary};
                if (!in) {
                    std::fprintf(stderr, "hearth-cli run: cannot read %.*s\n", int(v.size()), v.data());
                    return 2;
                }
                prediction.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
                havePrediction = true;
            }
        } else if (a == "--mmproj") {
            ok = value(v) && !v.empty();
            projectorPath = std::string(v);
        } else if (a == "--image") {
            ok = value(v) && !v.empty();
            imagePaths.emplace_back(v);
        } else if (a == "--print-ids") {
            printIdsFlag = true;
        } else if (a == "--ignore-eos") {
            ignoreEos = true;
        } else if (a == "--logits-out") {
            ok = value(v);
            logitsOut = std::string(v);
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "hearth-cli run: unknown option '%.*s' (see --help)\n",
                         int(a.size()), a.data());
            return 2;
        } else if (modelPath.empty()) {
            modelPath = std::string(a);
        } else {
            ok = false;
        }
        if (!ok) {
            std::fprintf(stderr, "hearth-cli run: bad or missing value for '%.*s'\n", int(a.size()),
                         a.data());
            return 2;
        }
    }
    if (modelPath.empty() || !havePrompt) {
        std::fputs(kRunHelp, stderr);
        return 2;
    }
    auto fail = [&](const Status& s, int code) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", modelPath.c_str(), s.toString().c_str());
        return code;
    };
    EngineConfig config;
    config.modelPath = modelPath;
    config.contextLength = ctx;
    config.threads = threads;
    config.kvType = kvType;
    config.kvMemoryBytes = kvMemory;
    config.useMmap = useMmap;
    config.device = device;
    config.gpuLayers = gpuLayers;
    config.cpuMoeLayers = cpuMoeLayers;
    config.maxNumSeqs = 1;
    config.speculation = spec;
    if (!imagePaths.empty() && projectorPath.empty()) {
        Result<std::string> found = findProjectorFor(modelPath);
        if (found && !found->empty()) {
            projectorPath = *found;
            std::fprintf(stderr, "hearth-cli: vision projector %s (found beside the model)\n", projectorPath.c_str());
        }
    }
    config.projectorPath = projectorPath;
    auto engine = Engine::create(config);
    if (!engine) return fail(engine.status(), 2);
    for (const std::string& note : (*engine)->model().deviceNotes) std::fprintf(stderr, "hearth-cli: %s\n", note.c_str());
    std::vector<PromptImage> images;
    Result<std::vector<int32_t>> promptIds = std::vector<int32_t>{};
    if (!imagePaths.empty()) {
        if (projectorPath.empty())
            return fail(invalidArgument("--image needs the model's vision projector: --mmproj PROJ.gguf, or an mmproj "
                                        "file that fits it beside the model"),
                        2);
        Result<std::vector<PromptImage>> encoded = encodeImages(**engine, imagePaths);
        if (!encoded) return fail(encoded.status(), 2);
        images = std::move(*encoded);
        // Without markers the images come first, as llama.cpp's mtmd-cli puts them.
        if (prompt.find(kImageMarker) == std::string::npos) {
            std::string marked;
            for (size_t k = 0; k < images.size(); ++k) marked += kImageMarker;
            prompt = marked + prompt;
        }
        std::string text = prompt;
        bool addSpecial = true;
        if (chat) {
            Result<std::string> rendered = (*engine)->renderChat(tmpl::singleUserMessage(prompt));
            if (!rendered) return fail(rendered.status(), 2);
            text = *rendered;
            const tokenizer::Tokenizer& tok = (*engine)->tokenizer();
            if (tok.addBos() && tok.bos() != tokenizer::kNoToken && text.rfind(tok.tokenText(tok.bos()), 0) == 0)
                addSpecial = false; // the template wrote BOS
        }
        promptIds = encodeWithImages((*engine)->tokenizer(), text, addSpecial, images, *(*engine)->projector(),
                                     (*engine)->model().nVocab);
    }
    if (images.empty())
        promptIds = chat ? (*engine)->encodeChat(tmpl::singleUserMessage(prompt))
                         : (*engine)->tokenizer().encode(prompt, true, true);
    if (!promptIds) return fail(promptIds.status(), 2);
    if (chat && (*engine)->model().chatTemplateBuiltin)
        std::fprintf(stderr, "hearth-cli: %s has no chat template; using the built-in ChatML template\n",
                     modelPath.c_str());

    auto sink = std::make_shared<PrintingSink>(!logitsOut.empty());
    GenerationRequest req;
    req.prompt = *promptIds;
    req.images = std::move(images);
    req.sampling = sp;
    req.maxTokens = nPredict;
    req.ignoreEos = ignoreEos;
    req.returnLogits = !logitsOut.empty();
    req.stopStrings = stops;
    req.sink = sink;
    if (havePrediction) {
        Result<std::vector<int32_t>> ids = (*engine)->tokenizer().encode(prediction, false, false);
        if (!ids) return fail(ids.status(), 2);
        req.prediction = std::move(*ids);
    }
    if ((spec.ngram || havePrediction || spec.synthLength > 0 || !spec.draftModel.empty()) &&
        !(*engine)->model().speculationUnavailable.empty())
        std::fprintf(stderr, "hearth-cli: %s\n", (*engine)->model().speculationUnavailable.c_str());
    auto id = (*engine)->submit(req);
    if (!id) return fail(id.status(), 2);
    sink->wait();
    std::printf("\n");
    if (!sink->error.isOk()) return fail(sink->error, 1);
    if (!logitsOut.empty()) {
        std::ofstream out(logitsOut, std::ios::binary);
        out.write(reinterpret_cast<const char*>(sink->logits.data()),
                  std::streamsize(sink->logits.size() * sizeof(float)));
        if (!out) {
            std::fprintf(stderr, "hearth-cli: cannot write %s\n", logitsOut.c_str());
            return 1;
        }
    }
    if (printIdsFlag) {
        printIds("prompt ids", *promptIds);
        printIds("generated ids", sink->ids);
    }
    std::fflush(stdout);
    const Usage& u = sink->usage;
    std::fprintf(stderr, "hearth-cli: %d prompt + %d generated tokens, first token %.0f ms, %.1f tok/s (%s)\n",
                 u.promptTokens, u.completionTokens, u.timeToFirstTokenMs,
                 u.generationMs > 0 ? 1000.0 * (u.completionTokens - 1) / u.generationMs : 0.0,
                 finishReasonName(sink->reason));
    if (u.draftTokens > 0)
        std::fprintf(stderr, "hearth-cli: speculative decoding: %d of %d drafted tokens accepted (%.0f%%)\n",
                     u.acceptedDraftTokens, u.draftTokens, 100.0 * u.acceptedDraftTokens / u.draftTokens);
    return 0;
}

} // namespace hearth::cli
