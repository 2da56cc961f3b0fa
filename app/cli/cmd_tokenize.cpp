// `hearth-cli tokenize`: prints the token ids of a text under a model's tokenizer, one line,
// separated by spaces.
#include "commands.h"

#include "hearth/gguf.h"
#include "hearth/tokenizer.h"

#include <cstdio>
#include <string>

namespace hearth::cli {

namespace {

const char* kTokenizeUsage =
    "usage: hearth-cli tokenize MODEL.gguf TEXT [--add-special] [--parse-special]\n";

const char* kTokenizeHelp =
    "usage: hearth-cli tokenize MODEL.gguf TEXT [--add-special] [--parse-special]\n"
    "  prints the token ids of TEXT, separated by spaces, on one line\n"
    "  --add-special     add BOS/EOS where the model's vocabulary asks for them\n"
    "  --parse-special   turn special-token text such as <|eot_id|> into those tokens\n";

} // namespace

int runTokenize(Args args) {
    std::string modelPath;
    std::string text;
    bool haveModel = false;
    bool haveText = false;
    bool addSpecial = false;
    bool parseSpecial = false;
    bool optionsEnded = false;
    for (std::string_view a : args) {
        if (!optionsEnded && (a == "-h" || a == "--help")) {
            std::fputs(kTokenizeHelp, stdout);
            return 0;
        }
        if (!optionsEnded && a == "--") {
            optionsEnded = true;
        } else if (!optionsEnded && a == "--add-special") {
            addSpecial = true;
        } else if (!optionsEnded && a == "--parse-special") {
            parseSpecial = true;
        } else if (!optionsEnded && a.size() > 1 && a.substr(0, 2) == "--") {
            std::fprintf(stderr, "hearth-cli tokenize: unknown option %.*s; %s",
                         static_cast<int>(a.size()), a.data(), kTokenizeUsage);
            return 2;
        } else if (!haveModel) {
            modelPath = std::string(a);
            haveModel = true;
        } else if (!haveText) {
            text = std::string(a);
            haveText = true;
        } else {
            std::fprintf(stderr, "hearth-cli tokenize: too many arguments; %s", kTokenizeUsage);
            return 2;
        }
    }
    if (!haveModel || !haveText) {
        std::fputs(kTokenizeUsage, stderr);
        return 2;
    }

    auto file = gguf::File::open(modelPath);
    if (!file) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", modelPath.c_str(),
                     file.status().toString().c_str());
        return 2;
    }
    auto tok = tokenizer::Tokenizer::fromGguf(*file);
    if (!tok) {
        std::fprintf(stderr, "hearth-cli: %s: %s\n", modelPath.c_str(),
                     tok.status().toString().c_str());
        return 2;
    }
    for (const std::string& w : tok->warnings()) {
        std::fprintf(stderr, "hearth-cli: %s: warning: %s\n", modelPath.c_str(), w.c_str());
    }
    auto ids = tok->encode(text, addSpecial, parseSpecial);
    if (!ids) {
        std::fprintf(stderr, "hearth-cli: %s\n", ids.status().toString().c_str());
        return 1;
    }
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) {
        if (i) line += ' ';
        line += std::to_string((*ids)[i]);
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
    return 0;
}

} // namespace hearth::cli
