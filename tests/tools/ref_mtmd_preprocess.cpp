// The reference's preprocessing of an image, for tests of Hearth's: llama.cpp's mtmd (built from
// the reference's source bundle) resizes and normalises one image given as raw RGB bytes with the
// dynamic-size preprocessor (the one Gemma 4's projectors use), and the result is written as
// float32 [height][width][3].
// Usage: ref_mtmd_preprocess MMPROJ.gguf IMAGE.rgb WIDTH HEIGHT OUT.f32
// Prints "width height" of the preprocessed image on success.
#include "clip-impl.h"
#include "clip-model.h"
#include "clip.h"
#include "ggml-backend.h"
#include "mtmd-image.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s MMPROJ IMAGE.rgb WIDTH HEIGHT OUT.f32\n", argv[0]);
        return 2;
    }
    const int width = std::atoi(argv[3]), height = std::atoi(argv[4]);
    std::ifstream in(argv[2], std::ios::binary);
    std::vector<uint8_t> rgb((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (width < 1 || height < 1 || rgb.size() != size_t(width) * size_t(height) * 3) {
        std::fprintf(stderr, "the image must be WIDTH x HEIGHT x 3 bytes\n");
        return 2;
    }
    ggml_backend_load_all();
    clip_context_params cp{};
    cp.use_gpu = false;
    cp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
    cp.warmup = false;
    clip_init_result clip = clip_init(argv[1], cp);
    if (!clip.ctx_v) return 1;
    clip_image_u8 image;
    image.set_size({width, height}, false);
    image.cpy_buf(rgb);
    const mtmd_image_preprocessor_dyn_size preprocessor(clip.ctx_v);
    const mtmd_image_preproc_out out = preprocessor.preprocess(image);
    if (out.entries.size() != 1) return 1;
    const clip_image_f32& f = out.entries[0];
    std::ofstream o(argv[5], std::ios::binary);
    o.write(reinterpret_cast<const char*>(f.get_ro_buf().data()), std::streamsize(f.get_ro_buf().size() * sizeof(float)));
    std::printf("%d %d\n", f.nx(), f.ny());
    clip_free(clip.ctx_v);
    return o ? 0 : 1;
}
