// Test harness around the reference llama.cpp library (an oracle, never part of the product):
// quantizes a model with llama_model_quantize, optionally with an importance matrix given as a
// text file of lines "NAME V0 V1 ..." (the per-column importance llama.cpp's quantize tool
// derives from an imatrix file). OUT and FTYPE may be comma-separated lists of the same length:
// one process then writes every mix (ggml builds its low-bit grids' tables once per process, which
// is most of the time a low-bit mix of a small model takes).
// usage: ref_quantize BACKEND_DIR IN.gguf OUT.gguf[,OUT2...] FTYPE[,FTYPE2...] [IMPORTANCE.txt]
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <list>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr, "usage: ref_quantize BACKEND_DIR IN.gguf OUT.gguf[,...] FTYPE[,...] [IMPORTANCE.txt]\n");
        return 2;
    }
    ggml_backend_load_all_from_path(argv[1]);
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    std::list<std::string> names;            // stable storage for the entries' names
    std::list<std::vector<float>> values;
    std::vector<llama_model_imatrix_data> entries;
    if (argc == 6) {
        std::ifstream in(argv[5]);
        for (std::string line; std::getline(in, line);) {
            std::istringstream fields(line);
            std::string name;
            fields >> name;
            names.push_back(name);
            values.emplace_back(std::istream_iterator<float>(fields), std::istream_iterator<float>());
            entries.push_back({names.back().c_str(), values.back().data(), values.back().size()});
        }
        entries.push_back({nullptr, nullptr, 0});
    }
    const auto split = [](const std::string& list) {
        std::vector<std::string> items;
        std::istringstream in(list);
        for (std::string item; std::getline(in, item, ',');) items.push_back(item);
        return items;
    };
    const std::vector<std::string> outs = split(argv[3]), ftypes = split(argv[4]);
    if (outs.empty() || outs.size() != ftypes.size()) {
        std::fprintf(stderr, "ref_quantize: %zu outputs for %zu types\n", outs.size(), ftypes.size());
        return 2;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
        llama_model_quantize_params p = llama_model_quantize_default_params();
        p.nthread = 1;
        p.ftype = llama_ftype(std::atoi(ftypes[i].c_str()));
        if (!entries.empty()) p.imatrix = entries.data();
        const uint32_t rc = llama_model_quantize(argv[2], outs[i].c_str(), &p);
        if (rc != 0) {
            std::fprintf(stderr, "ref_quantize: llama_model_quantize failed (%u) for type %s\n", rc, ftypes[i].c_str());
            return 1;
        }
    }
    return 0;
}
