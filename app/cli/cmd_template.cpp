// hearth-cli template: renders a chat request through a model's chat template (from a GGUF or a
// .jinja file) and prints the prompt exactly, the way transformers' apply_chat_template does.
#include "commands.h"

#include "hearth/gguf.h"
#include "hearth/model_chat.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace hearth::cli {

namespace {

constexpr const char* kUsage =
    "usage: hearth-cli template MODEL.gguf|TEMPLATE.jinja --input REQUEST.json [--now YYYY-MM-DDTHH:MM:SS]\n"
    "\n"
    "Renders a chat request with the model's chat template and prints the prompt exactly (no newline\n"
    "is added). REQUEST.json holds \"messages\" and optionally \"tools\", \"documents\",\n"
    "\"add_generation_prompt\", \"continue_final_message\", \"template_kwargs\" and special tokens\n"
    "(\"bos_token\", \"eos_token\", ...). With a GGUF, the model's own special tokens are used unless\n"
    "the request sets them; a GGUF without a template gets the built-in ChatML template.\n"
    "--now fixes the clock that strftime_now() reads (default: the local time).\n"
    "Exit status: 0 rendered, 1 the template failed (its message on stderr), 2 bad usage or input.\n";

bool readFile(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return !in.bad();
}

bool looksLikeGguf(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && std::string(magic, 4) == "GGUF";
}

bool parseNow(std::string_view text, tmpl::DateTime& out) {
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    const std::string t(text);
    const int n = std::sscanf(t.c_str(), "%d-%d-%d%*[T ]%d:%d:%d", &y, &mo, &d, &h, &mi, &s);
    if (n != 3 && n != 6) return false;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) return false;
    out = tmpl::DateTime{y, mo, d, h, mi, s};
    return true;
}

} // namespace

// runTemplate with explicit output streams (tests capture them).
int runTemplateStreams(Args args, std::FILE* out, std::FILE* err) {
    std::string modelPath, inputPath;
    tmpl::RenderOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "--help" || a == "-h") {
            std::fputs(kUsage, out);
            return 0;
        }
        if (a == "--input" || a == "--now") {
            if (i + 1 >= args.size()) {
                std::fprintf(err, "hearth-cli template: %.*s needs a value\n%s", int(a.size()), a.data(), kUsage);
                return 2;
            }
            const std::string_view v = args[++i];
            if (a == "--input") {
                inputPath = std::string(v);
            } else {
                tmpl::DateTime now;
                if (!parseNow(v, now)) {
                    std::fprintf(err, "hearth-cli template: --now wants YYYY-MM-DDTHH:MM:SS, got '%.*s'\n", int(v.size()), v.data());
                    return 2;
                }
                options.clock = [now] { return now; };
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(err, "hearth-cli template: unknown option '%.*s'\n%s", int(a.size()), a.data(), kUsage);
            return 2;
        } else if (modelPath.empty()) {
            modelPath = std::string(a);
        } else {
            std::fprintf(err, "hearth-cli template: unexpected argument '%.*s'\n%s", int(a.size()), a.data(), kUsage);
            return 2;
        }
    }
    if (modelPath.empty() || inputPath.empty()) {
        std::fputs(kUsage, err);
        return 2;
    }

    std::optional<tmpl::ModelChat> chat;
    if (looksLikeGguf(modelPath)) {
        gguf::ReadOptions readOptions;
        readOptions.requireTensorData = false;
        Result<gguf::File> file = gguf::File::open(modelPath, readOptions);
        if (!file) {
            std::fprintf(err, "hearth-cli template: %s: %s\n", modelPath.c_str(), file.status().toString().c_str());
            return 2;
        }
        Result<tmpl::ModelChat> loaded = tmpl::modelChatFromGguf(*file);
        if (!loaded) {
            std::fprintf(err, "%s\n", loaded.status().message().c_str());
            return 1;
        }
        if (loaded->builtin)
            std::fprintf(err, "hearth-cli template: %s has no tokenizer.chat_template; using the built-in ChatML template\n",
                         modelPath.c_str());
        chat.emplace(std::move(*loaded));
    } else {
        std::string source;
        if (!readFile(modelPath, source)) {
            std::fprintf(err, "hearth-cli template: cannot read %s\n", modelPath.c_str());
            return 2;
        }
        Result<tmpl::ChatTemplate> parsed = tmpl::ChatTemplate::parse(source);
        if (!parsed) {
            std::fprintf(err, "%s\n", parsed.status().message().c_str());
            return 1;
        }
        chat.emplace(tmpl::ModelChat{std::move(*parsed)});
    }

    std::string requestText;
    if (!readFile(inputPath, requestText)) {
        std::fprintf(err, "hearth-cli template: cannot read %s\n", inputPath.c_str());
        return 2;
    }
    if (!nlohmann::ordered_json::accept(requestText)) {
        std::fprintf(err, "hearth-cli template: %s is not valid JSON\n", inputPath.c_str());
        return 2;
    }
    Result<tmpl::ChatRequest> request = tmpl::chatRequestFromJson(requestText);
    if (!request) {
        std::fprintf(err, "hearth-cli template: %s: %s\n", inputPath.c_str(), request.status().message().c_str());
        return 2;
    }
    Result<std::string> prompt = chat->render(std::move(*request), options);
    if (!prompt) {
        std::fprintf(err, "%s\n", prompt.status().message().c_str());
        return 1;
    }
    if (!prompt->empty() && std::fwrite(prompt->data(), 1, prompt->size(), out) != prompt->size()) return 1;
    std::fflush(out);
    return 0;
}

int runTemplate(Args args) { return runTemplateStreams(args, stdout, stderr); }

} // namespace hearth::cli
