// The reference's image embeddings, for tests of Hearth's vision encoders: llama.cpp's mtmd
// (built from the reference's source bundle) preprocesses and encodes one image given as raw RGB
// bytes, and the embeddings are written as float32 [tokens][width]; benchmarks time the encoding.
// Usage: ref_mtmd_embed MODEL.gguf MMPROJ.gguf IMAGE.rgb WIDTH HEIGHT OUT.f32 [REPS [THREADS]]
// Prints "tokens width" on success, and "encode_ms T" per repetition on stderr.
// HEARTH_REF_BACKEND_DIR: load ggml's CPU variants from there (one variant: an ISA's code).
#include "ggml-backend.h"
#include "llama.h"
#include "mtmd.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 7 || argc > 9) {
        std::fprintf(stderr, "usage: %s MODEL MMPROJ IMAGE.rgb WIDTH HEIGHT OUT.f32 [REPS [THREADS]]\n", argv[0]);
        return 2;
    }
    const int width = std::atoi(argv[4]), height = std::atoi(argv[5]);
    const int reps = argc > 7 ? std::atoi(argv[7]) : 1, threads = argc > 8 ? std::atoi(argv[8]) : 2;
    std::ifstream in(argv[3], std::ios::binary);
    std::vector<unsigned char> rgb((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
    if (width < 1 || height < 1 || rgb.size() != size_t(width) * size_t(height) * 3) {
        std::fprintf(stderr, "the image must be WIDTH x HEIGHT x 3 bytes\n");
        return 2;
    }
    if (const char* dir = std::getenv("HEARTH_REF_BACKEND_DIR"))
        ggml_backend_load_all_from_path(dir);
    else
        ggml_backend_load_all(); // the CPU variants beside the tool
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    mtmd_context_params cp = mtmd_context_params_default();
    cp.use_gpu = false;
    cp.n_threads = threads > 0 ? threads : 2;
    cp.print_timings = false;
    cp.warmup = false;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED; // the plain attention graph, in fp32
    mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
    if (!ctx) return 1;
    mtmd_bitmap* bitmap = mtmd_bitmap_init(uint32_t(width), uint32_t(height), rgb.data());
    mtmd_input_chunks* chunks = mtmd_input_chunks_init();
    const char* marker = mtmd_default_marker();
    mtmd_input_text text{marker, std::strlen(marker), false, true};
    const mtmd_bitmap* bitmaps[] = {bitmap};
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) return 1;
    const int n_embd = llama_model_n_embd_inp(model);
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
        const mtmd_input_chunk* chunk = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(chunk) != MTMD_INPUT_CHUNK_TYPE_IMAGE) continue;
        for (int r = 0; r < (reps > 0 ? reps : 1); ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            if (mtmd_encode_chunk(ctx, chunk) != 0) return 1;
            const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
            std::fprintf(stderr, "encode_ms %.1f\n", ms.count());
        }
        const size_t n = mtmd_input_chunk_get_n_tokens(chunk);
        const float* embd = mtmd_get_output_embd(ctx);
        std::ofstream out(argv[6], std::ios::binary);
        out.write(reinterpret_cast<const char*>(embd),
                  std::streamsize(n * size_t(n_embd) * sizeof(float)));
        std::printf("%zu %d\n", n, n_embd);
        return out ? 0 : 1;
    }
    std::fprintf(stderr, "no image chunk\n");
    return 1;
}
