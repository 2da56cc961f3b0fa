// The table of hearth-cli subcommands.
#include "commands.h"

namespace hearth::cli {

int runRun(Args args);
int runInspect(Args args);
int runSynth(Args args);
int runQuantize(Args args);
int runTokenize(Args args);
int runTemplate(Args args);

std::span<const Command> commands() {
    static const Command table[] = {
        {"inspect", "architecture, tensors, tokenizer and memory estimate of a GGUF model",
         runInspect},
        {"quantize", "re-quantize a model to a type or mix (Q4_K_M, Q8_0, ...)", runQuantize},
        {"synth", "write a random-weight model of a real shape with a real tokenizer", runSynth},
        {"tokenize", "print the token ids of a text (--add-special, --parse-special)", runTokenize},
        {"template", "render a chat template for a request (model or .jinja, --input REQ.json)",
         runTemplate},
        {"run", "generate text from a prompt (streams; --print-ids, --logits-out)", runRun},
    };
    return table;
}

} // namespace hearth::cli
