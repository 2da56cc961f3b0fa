// Test harness around the reference llama.cpp library (an oracle, never part of the product):
// runs chunks of token ids and sums the squared inputs of every layer weight's matmul through the
// scheduler's eval callback, as llama.cpp's imatrix tool does, and writes one line per weight:
// "NAME COUNT V0 V1 ...".
// usage: ref_imatrix MODEL.gguf BACKEND_DIR OUT.txt CTX ID,ID,... (a multiple of CTX ids)
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Sums {
    std::vector<double> values;
    long long count = 0;
};
std::map<std::string, Sums> g_sums;

bool observe(ggml_tensor* t, bool ask, void*) {
    if (ask) return t->op == GGML_OP_MUL_MAT;
    const ggml_tensor* w = t->src[0];
    const ggml_tensor* x = t->src[1];
    const std::string name = w->name;
    if (name.rfind("blk.", 0) != 0 || x->ne[1] < 16 || x->type != GGML_TYPE_F32) return true;
    Sums& s = g_sums[name];
    s.values.resize(size_t(x->ne[0]), 0.0);
    std::vector<char> host(ggml_nbytes(x));
    ggml_backend_tensor_get(x, host.data(), 0, host.size());
    for (int64_t r = 0; r < x->ne[1] * x->ne[2] * x->ne[3]; ++r) {
        const float* row = reinterpret_cast<const float*>(host.data() + r * x->nb[1]);
        for (int64_t j = 0; j < x->ne[0]; ++j) s.values[size_t(j)] += double(row[j]) * row[j];
        ++s.count;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: ref_imatrix MODEL.gguf BACKEND_DIR OUT.txt CTX IDS\n");
        return 2;
    }
    const int ctx = std::atoi(argv[4]);
    std::vector<llama_token> ids;
    std::stringstream list(argv[5]);
    for (std::string item; std::getline(list, item, ',');) ids.push_back(std::atoi(item.c_str()));
    if (ctx < 16 || ids.size() % size_t(ctx) != 0) return 2;
    ggml_backend_load_all_from_path(argv[2]);
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_model* model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) return 1;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = uint32_t(ctx);
    cp.n_batch = uint32_t(ctx);
    cp.n_ubatch = uint32_t(ctx);
    cp.n_threads = 1;
    cp.n_threads_batch = 1;
    cp.type_k = GGML_TYPE_F32;
    cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.cb_eval = observe;
    cp.cb_eval_user_data = nullptr;
    llama_context* lctx = llama_init_from_model(model, cp);
    if (!lctx) return 1;
    llama_batch batch = llama_batch_init(ctx, 0, 1);
    for (size_t c = 0; c < ids.size() / size_t(ctx); ++c) {
        llama_memory_clear(llama_get_memory(lctx), true);
        for (int i = 0; i < ctx; ++i) {
            batch.token[i] = ids[c * size_t(ctx) + size_t(i)];
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1; // every row, as the imatrix tool asks: the last layer then runs on all tokens
        }
        batch.n_tokens = ctx;
        if (llama_decode(lctx, batch) != 0) return 1;
    }
    FILE* out = std::fopen(argv[3], "w");
    if (!out) return 1;
    for (const auto& [name, s] : g_sums) {
        std::fprintf(out, "%s %lld", name.c_str(), s.count);
        for (double v : s.values) std::fprintf(out, " %.9g", v);
        std::fprintf(out, "\n");
    }
    std::fclose(out);
    return 0;
}
