// The table of hearth-cli subcommands.
#include "commands.h"

#include <string>

namespace hearth::cli {

int runRun(Args args);
int runInspect(Args args);
int runSynth(Args args);
int runEmbedImage(Args args);
int runQuantize(Args args);
int runSplit(Args args);
int runTokenize(Args args);
int runTemplate(Args args);
int runBenchServe(Args args);
int runBench(Args args);
int runDevices(Args args);
int runSelftest(Args args);
int runPerplexity(Args args);
int runImatrix(Args args);
int runPs(Args args);
#ifdef HEARTH_CLI_LIBRARY
int runPull(Args args);
int runLs(Args args);
int runRm(Args args);
#endif

std::span<const Command> commands() {
    static const Command table[] = {
        {"inspect", "architecture, tensors, tokenizer and memory estimate of a GGUF model",
         runInspect},
        {"quantize", "re-quantize a model to a type or mix (Q4_K_M, Q8_0, ...)", runQuantize},
        {"perplexity", "llama.cpp-style perplexity of a model on a text file (--text F, --ctx N)", runPerplexity},
        {"imatrix", "collect an importance matrix on a text file for quantize --imatrix", runImatrix},
        {"split", "write a model as gguf-split parts (--max-size 2G | --max-tensors N), or --merge them",
         runSplit},
        {"synth", "write a random-weight model of a real shape with a real tokenizer", runSynth},
        {"tokenize", "print the token ids of a text (--add-special, --parse-special)", runTokenize},
        {"template", "render a chat template for a request (model or .jinja, --input REQ.json)",
         runTemplate},
        {"run", "generate text from a prompt (streams; --print-ids, --logits-out)", runRun},
        {"embed-image", "an image's embeddings from a projector's vision encoder, timed (--mmproj P IMAGE)",
         runEmbedImage},
        {"bench", "prompt and generation throughput, like llama-bench (-p 512 -n 128, --json)", runBench},
        {"bench-serve", "serving benchmark: concurrent vs sequential, TTFT, TPOT, prefix reuse",
         runBenchServe},
        {"devices", "list the compute devices (CPU, Vulkan, CUDA) with their memory (--json)", runDevices},
        {"selftest", "check a device's ops against the reference (--device ID, --quick, --json)", runSelftest},
#ifdef HEARTH_CLI_LIBRARY
        {"pull", "download a model from the hub into the library (REPO[:QUANT|:FILE], resumes, sha256)", runPull},
        {"ls", "list the models in the library (name, quantization, size, modified)", runLs},
        {"rm", "delete a model from the library (a referenced file is only forgotten)", runRm},
#endif
        {"ps", "what a running hearth-server has loaded (--host H --port P)", runPs},
    };
    return table;
}

} // namespace hearth::cli
