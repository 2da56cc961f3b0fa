// Test harness around the reference llama.cpp library (an oracle, never part of the product):
// evaluates a fixed token list in one batch and writes float32 logits [n_tokens, n_vocab]; or,
// given a step count, evaluates the list as a prompt, then decodes that many tokens greedily one
// at a time (argmax, the first on ties) and writes the logits row that chose each [steps, n_vocab].
// usage: ref_logits MODEL.gguf BACKEND_DIR OUT.f32 ID,ID,ID,... [GREEDY_STEPS]
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr, "usage: ref_logits MODEL.gguf BACKEND_DIR OUT.f32 IDS [GREEDY_STEPS]\n");
        return 2;
    }
    std::vector<llama_token> ids;
    std::stringstream list(argv[4]);
    for (std::string item; std::getline(list, item, ',');) ids.push_back(std::atoi(item.c_str()));
    const int steps = argc == 6 ? std::atoi(argv[5]) : 0;
    if (ids.empty() || steps < 0) {
        std::fprintf(stderr, "ref_logits: no ids, or a negative step count\n");
        return 2;
    }
    ggml_backend_load_all_from_path(argv[2]);
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        std::fprintf(stderr, "ref_logits: cannot load %s\n", argv[1]);
        return 1;
    }
    const int nVocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(ids.size() + size_t(steps) + 16);
    cp.n_batch = uint32_t(ids.size());
    cp.n_ubatch = uint32_t(ids.size());
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; // flash attention rounds K/V to F16
    llama_context* ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        std::fprintf(stderr, "ref_logits: cannot create a context\n");
        return 1;
    }
    llama_batch batch = llama_batch_init(int32_t(ids.size()), 0, 1);
    for (size_t i = 0; i < ids.size(); ++i) {
        batch.token[i] = ids[i];
        batch.pos[i] = llama_pos(i);
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = steps == 0 || i + 1 == ids.size() ? 1 : 0;
    }
    batch.n_tokens = int32_t(ids.size());
    if (llama_decode(ctx, batch) != 0) {
        std::fprintf(stderr, "ref_logits: decode failed\n");
        return 1;
    }
    FILE* out = std::fopen(argv[3], "wb");
    if (!out) return 1;
    if (steps == 0) {
        for (size_t i = 0; i < ids.size(); ++i)
            std::fwrite(llama_get_logits_ith(ctx, int32_t(i)), sizeof(float), size_t(nVocab), out);
    }
    // Greedy: the row of the last evaluated token picks the next one, which is fed back alone.
    llama_pos pos = llama_pos(ids.size());
    for (int s = 0; s < steps; ++s) {
        const float* row = llama_get_logits_ith(ctx, -1);
        std::fwrite(row, sizeof(float), size_t(nVocab), out);
        llama_token best = 0;
        for (int v = 1; v < nVocab; ++v)
            if (row[v] > row[best]) best = v;
        std::printf("%s%d", s ? " " : "", best);
        if (s + 1 == steps) break;
        batch.n_tokens = 1;
        batch.token[0] = best;
        batch.pos[0] = pos++;
        batch.n_seq_id[0] = 1;
        batch.seq_id[0][0] = 0;
        batch.logits[0] = 1;
        if (llama_decode(ctx, batch) != 0) {
            std::fprintf(stderr, "ref_logits: decode failed at greedy step %d\n", s);
            std::fclose(out);
            return 1;
        }
    }
    if (steps) std::printf("\n");
    std::fclose(out);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
