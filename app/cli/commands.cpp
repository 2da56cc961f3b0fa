// The table of hearth-cli subcommands.
#include "commands.h"

namespace hearth::cli {

int runRun(Args args);

std::span<const Command> commands() {
    static const Command table[] = {
        {"run", "generate text from a prompt (streams; --print-ids, --logits-out)", runRun},
    };
    return table;
}

} // namespace hearth::cli
