// The reference's text logits after an image, for tests of Hearth's image input: llama.cpp's
// mtmd (built from the reference's source bundle) tokenizes a prompt holding its media marker
// around one image given as raw RGB bytes, evaluates every chunk into a llama context as its
// helper does (an image's tokens at once where the model wants that) and writes the last
// position's logits as float32 [vocab].
// Usage: ref_mtmd_logits MODEL.gguf MMPROJ.gguf IMAGE.rgb WIDTH HEIGHT PROMPT OUT.f32 [GREEDY]
// PROMPT holds "<__media__>" where the image goes. Prints one line per chunk: "text ID ID ..."
// or "image N" (its N positions), then "vocab V", then with GREEDY > 0 "greedy ID ..." (that many
// tokens decoded greedily after the prompt).
#include "ggml-backend.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 8 && argc != 9) {
        std::fprintf(stderr, "usage: %s MODEL MMPROJ IMAGE.rgb WIDTH HEIGHT PROMPT OUT.f32 [GREEDY]\n", argv[0]);
        return 2;
    }
    const int width = std::atoi(argv[4]), height = std::atoi(argv[5]);
    std::ifstream in(argv[3], std::ios::binary);
    std::vector<unsigned char> rgb((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (width < 1 || height < 1 || rgb.size() != size_t(width) * size_t(height) * 3) {
        std::fprintf(stderr, "the image must be WIDTH x HEIGHT x 3 bytes\n");
        return 2;
    }
    if (const char* dir = std::getenv("HEARTH_REF_BACKEND_DIR"))
        ggml_backend_load_all_from_path(dir);
    else
        ggml_backend_load_all();
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    llama_context_params lp = llama_context_default_params();
    lp.n_ctx = 1024;
    lp.n_batch = 512;
    lp.n_ubatch = 512;
    lp.n_threads = lp.n_threads_batch = 2;
    llama_context* lctx = llama_init_from_model(model, lp);
    if (!lctx) return 1;
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.n_threads = 2;
    cp.print_timings = false;
    cp.warmup = false;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) return 1;
    mtmd_bitmap* bitmap = mtmd_bitmap_init(uint32_t(width), uint32_t(height), rgb.data());
    mtmd_input_chunks* chunks = mtmd_input_chunks_init();
    const std::string prompt = argv[6];
    mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
    const mtmd_bitmap* bitmaps[] = {bitmap};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) return 1;
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
        const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
            size_t n = 0;
            const llama_token* ids = mtmd_input_chunk_get_tokens_text(chunk, &n);
            std::printf("text");
            for (size_t k = 0; k < n; ++k) std::printf(" %d", ids[k]);
            std::printf("\n");
        } else {
            std::printf("image %zu\n", mtmd_input_chunk_get_n_tokens(chunk));
        }
    }
    llama_pos past = 0;
    if (mtmd_helper_eval_chunks(ctx, lctx, chunks, 0, 0, 512, true, &past) != 0) return 1;
    const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    const float* logits = llama_get_logits_ith(lctx, -1);
    std::ofstream out(argv[7], std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits), std::streamsize(size_t(vocab) * sizeof(float)));
    std::printf("vocab %d\n", vocab);
    const int greedy = argc > 8 ? std::atoi(argv[8]) : 0;
    if (greedy > 0) {
        std::printf("greedy");
        const float* row = logits;
        for (int g = 0; g < greedy; ++g) {
            llama_token best = 0;
            for (llama_token t = 1; t < vocab; ++t)
                if (row[t] > row[best]) best = t;
            std::printf(" %d", best);
            llama_batch b = llama_batch_get_one(&best, 1);
            if (llama_decode(lctx, b) != 0) return 1;
            row = llama_get_logits_ith(lctx, -1);
        }
        std::printf("\n");
    }
    return out ? 0 : 1;
}
