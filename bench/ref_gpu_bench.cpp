// ref_gpu_bench.cpp: llama.cpp (the prebuilt libllama of the reference, a benchmark peer, not
// part of Hearth) measured with its layers on a GPU backend, for scripts/gpu-check.sh:
//   pp N  one llama_decode of N tokens (BOS, then fixed pseudo-random ids) into an empty cache;
//   tg N  N single-token decodes into an empty cache, each synchronized;
//   streams S (--parallel S): S sequences of N prompt tokens decoded as one batch, then G steps
//         that decode one token for each sequence: aggregate generated tokens per second over the
//         whole run (prompts included), as a server with S requests in flight would see;
//   greedy (--greedy-ids PROMPT K): the argmax continuation of a text prompt, as token ids, and
//         at each step the gap between the top two logits.
// --cpu keeps everything on the CPU backend (no GPU device, no operation offloaded to one).
// --n-cpu-moe N keeps the expert weights (ffn_*_exps) of the first N layers in CPU memory, as
// llama.cpp's own --n-cpu-moe does (tensor buffer-type overrides by name).
// One untimed warm-up of each, then -r timed repetitions; one JSON object on stdout.
// Built by scripts/gpu-check.sh against the reference's headers and libraries:
//   g++ -O2 -std=c++17 -I$REF/llama.cpp-src/include -I$REF/llama.cpp-src/ggml/include
//       ref_gpu_bench.cpp -o ref-gpu-bench LIBDIR/libllama*.so LIBDIR/libggml*.so -Wl,-rpath,LIBDIR
#include "ggml-backend.h"
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

double nowSeconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// xorshift64*: the same synthetic ids on every run.
struct Ids {
    uint64_t s = 0x2545F4914F6CDD1Dull;
    llama_token next(int vocab) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        return llama_token(((s * 0x2545F4914F6CDD1Dull) >> 33) % uint64_t(vocab));
    }
};

struct Options {
    std::string model, backendDir, greedyPrompt;
    int prompt = 512, gen = 128, reps = 2, gpuLayers = 999, parallel = 0, greedyCount = 0, cpuMoe = 0;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    bool cpuOnly = false;
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Fills `batch` with ids [0, n) of one sequence from position `pos`, logits for the last only.
void fill(llama_batch& batch, const std::vector<llama_token>& ids, int pos, llama_seq_id seq) {
    batch.n_tokens = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const int k = batch.n_tokens++;
        batch.token[k] = ids[i];
        batch.pos[k] = pos + int(i);
        batch.n_seq_id[k] = 1;
        batch.seq_id[k][0] = seq;
        batch.logits[k] = i + 1 == ids.size();
    }
}

int failed(const char* what) {
    std::fprintf(stderr, "ref-gpu-bench: %s failed\n", what);
    return 1;
}

int usage(const char* self) {
    std::fprintf(stderr,
                 "usage: %s -m MODEL [-p 512] [-n 128] [-r 2] [-ngl 999] [-t CORES] [--parallel S]\n"
                 "          [--greedy-ids PROMPT K] [--cpu] [--backend-dir DIR] [--n-cpu-moe N]\n",
                 self);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "--cpu") {
            o.cpuOnly = true;
            continue;
        }
        if (a == "--greedy-ids") {
            const char* text = value();
            const char* count = value();
            if (!text || !count) return usage(argv[0]);
            o.greedyPrompt = text;
            o.greedyCount = std::atoi(count);
            continue;
        }
        if (!(v = value())) return usage(argv[0]);
        if (a == "-m") o.model = v;
        else if (a == "-p") o.prompt = std::atoi(v);
        else if (a == "-n") o.gen = std::atoi(v);
        else if (a == "-r") o.reps = std::max(1, std::atoi(v));
        else if (a == "-ngl") o.gpuLayers = std::atoi(v);
        else if (a == "-t") o.threads = std::max(1, std::atoi(v));
        else if (a == "--parallel") o.parallel = std::max(0, std::atoi(v));
        else if (a == "--backend-dir") o.backendDir = v;
        else if (a == "--n-cpu-moe") o.cpuMoe = std::max(0, std::atoi(v));
        else return usage(argv[0]);
    }
    if (o.model.empty()) return usage(argv[0]);
    if (!o.backendDir.empty()) ggml_backend_load_all_from_path(o.backendDir.c_str());
    else ggml_backend_load_all();
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);

    std::string gpus;
    for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(d) == GGML_BACKEND_DEVICE_TYPE_GPU)
            gpus += std::string(gpus.empty() ? "" : "; ") + ggml_backend_dev_name(d) + " " + ggml_backend_dev_description(d);
    }
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = o.cpuOnly ? 0 : o.gpuLayers;
    ggml_backend_dev_t noDevices[1] = {nullptr};
    if (o.cpuOnly) mp.devices = noDevices;
    // One override per layer whose experts stay in RAM, then the terminating empty one.
    std::vector<std::string> patterns;
    std::vector<llama_model_tensor_buft_override> overrides;
    ggml_backend_dev_t cpuDev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (o.cpuMoe > 0 && cpuDev) {
        for (int l = 0; l < o.cpuMoe; ++l)
            patterns.push_back("blk\\." + std::to_string(l) + "\\.ffn_(up|down|gate|gate_up)_(ch|)exps");
        for (const std::string& p : patterns) overrides.push_back({p.c_str(), ggml_backend_dev_buffer_type(cpuDev)});
        overrides.push_back({nullptr, nullptr});
        mp.tensor_buft_overrides = overrides.data();
    }
    llama_model* model = llama_model_load_from_file(o.model.c_str(), mp);
    if (!model) {
        std::fprintf(stderr, "ref-gpu-bench: cannot load %s\n", o.model.c_str());
        return 1;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int nVocab = llama_vocab_n_tokens(vocab);
    const int streams = std::max(1, o.parallel);

    auto cp = llama_context_default_params();
    const int perSeq = std::max(o.prompt + o.gen, 64);
    cp.n_ctx = uint32_t(streams * perSeq + 64);
    cp.n_batch = uint32_t(std::max(streams * std::max(o.prompt, 1), 512));
    cp.n_ubatch = 512;
    cp.n_seq_max = uint32_t(streams);
    cp.kv_unified = true;
    cp.n_threads = cp.n_threads_batch = o.threads;
    if (o.cpuOnly) cp.op_offload = false;
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "ref-gpu-bench: cannot create a context\n");
        return 1;
    }
    auto clear = [&]() { llama_memory_clear(llama_get_memory(ctx), false); };
    llama_batch batch = llama_batch_init(int32_t(cp.n_batch), 0, 1);
    Ids ids;
    auto randomIds = [&](int n, bool bos) {
        std::vector<llama_token> v(size_t(std::max(n, 0)));
        for (int i = 0; i < n; ++i) v[size_t(i)] = i == 0 && bos && llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : ids.next(nVocab);
        return v;
    };
    // One sequence's prompt in batches of at most n_batch tokens.
    auto prefill = [&](const std::vector<llama_token>& p, llama_seq_id seq) {
        for (size_t at = 0; at < p.size(); at += cp.n_batch) {
            const size_t k = std::min<size_t>(cp.n_batch, p.size() - at);
            fill(batch, std::vector<llama_token>(p.begin() + long(at), p.begin() + long(at + k)), int(at), seq);
            if (llama_decode(ctx, batch)) return false;
        }
        llama_synchronize(ctx);
        return true;
    };

    char desc[256];
    llama_model_desc(model, desc, sizeof desc);
    std::string json = "{\"model\":\"" + o.model + "\",\"desc\":\"" + desc + "\",\"gpus\":\"" + gpus +
                       "\",\"gpu_layers\":" + std::to_string(mp.n_gpu_layers) +
                       ",\"cpu_moe_layers\":" + std::to_string(overrides.empty() ? 0 : o.cpuMoe);

    if (o.greedyCount > 0) {
        std::vector<llama_token> p(o.greedyPrompt.size() + 8);
        int n = llama_tokenize(vocab, o.greedyPrompt.c_str(), int32_t(o.greedyPrompt.size()), p.data(), int32_t(p.size()), true, false);
        if (n < 0) return failed("tokenizing the prompt");
        p.resize(size_t(n));
        clear();
        if (!prefill(p, 0)) return failed("decoding the greedy prompt");
        std::string out, gaps;
        int pos = n;
        for (int i = 0; i < o.greedyCount; ++i) {
            const float* logits = llama_get_logits_ith(ctx, -1);
            const llama_token t = llama_token(std::max_element(logits, logits + nVocab) - logits);
            float second = -INFINITY;
            for (int v = 0; v < nVocab; ++v)
                if (v != t) second = std::max(second, logits[v]);
            out += (i ? "," : "") + std::to_string(t);
            gaps += (i ? "," : "") + std::to_string(logits[t] - second);
            fill(batch, {t}, pos++, 0);
            if (llama_decode(ctx, batch)) return failed("a greedy step");
        }
        std::string prompt;
        for (int i = 0; i < n; ++i) prompt += (i ? "," : "") + std::to_string(p[size_t(i)]);
        json += ",\"prompt_ids\":[" + prompt + "],\"greedy_ids\":[" + out + "],\"greedy_gaps\":[" + gaps + "]";
    }
    if (o.parallel == 0 && o.prompt > 0) {
        std::vector<double> s;
        for (int r = 0; r <= o.reps; ++r) {
            const auto p = randomIds(o.prompt, true);
            clear();
            const double t0 = nowSeconds();
            if (!prefill(p, 0)) return failed("the pp decode");
            if (r > 0) s.push_back(nowSeconds() - t0); // the first run warms up
        }
        json += ",\"pp\":" + std::to_string(o.prompt / median(s));
    }
    if (o.parallel == 0 && o.gen > 0) {
        std::vector<double> s;
        for (int r = 0; r <= o.reps; ++r) {
            clear();
            const double t0 = nowSeconds();
            for (int i = 0; i < (r == 0 ? 1 : o.gen); ++i) {
                fill(batch, {ids.next(nVocab)}, i, 0);
                if (llama_decode(ctx, batch)) return failed("a tg decode");
                llama_synchronize(ctx);
            }
            if (r > 0) s.push_back(nowSeconds() - t0);
        }
        json += ",\"tg\":" + std::to_string(o.gen / median(s));
    }
    if (o.parallel > 0) {
        std::vector<double> s;
        for (int r = 0; r <= o.reps; ++r) {
            clear();
            const double t0 = nowSeconds();
            for (int q = 0; q < streams; ++q)
                if (!prefill(randomIds(o.prompt, true), q)) return failed("a stream's prompt");
            for (int step = 0; step < o.gen; ++step) {
                batch.n_tokens = 0;
                for (int q = 0; q < streams; ++q) {
                    const int k = batch.n_tokens++;
                    batch.token[k] = ids.next(nVocab);
                    batch.pos[k] = o.prompt + step;
                    batch.n_seq_id[k] = 1;
                    batch.seq_id[k][0] = q;
                    batch.logits[k] = true;
                }
                if (llama_decode(ctx, batch)) return failed("a streams step");
                llama_synchronize(ctx);
            }
            if (r > 0) s.push_back(nowSeconds() - t0);
        }
        json += ",\"streams\":" + std::to_string(streams) + ",\"streams_tok_s\":" + std::to_string(streams * o.gen / median(s));
    }
    std::printf("%s}\n", json.c_str());
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
