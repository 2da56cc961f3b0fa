// The table of hearth-cli subcommands.
#include "commands.h"

namespace hearth::cli {

std::span<const Command> commands() {
    static const Command table[] = {
        {"version", "print the version", [](Args) { return 0; }},
    };
    return table;
}

} // namespace hearth::cli
