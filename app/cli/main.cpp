// Entry point of hearth-cli: dispatches to a subcommand and prints help and version.
#include "commands.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace hearth::cli;

namespace {

void printHelp() {
    std::printf("hearth-cli %s - Hearth's command-line tools\n\n"
                "usage: hearth-cli COMMAND [ARGS...]\n\ncommands:\n",
                HEARTH_VERSION);
    for (const Command& c : commands())
        std::printf("  %-10.*s %.*s\n", int(c.name.size()), c.name.data(), int(c.summary.size()),
                    c.summary.data());
    std::printf("\nRun 'hearth-cli COMMAND --help' for a command's options.\n");
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        printHelp();
        return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version" || args[0] == "-V") {
        std::printf("hearth-cli %s\n", HEARTH_VERSION);
        return 0;
    }
    for (const Command& c : commands()) {
        if (c.name == args[0]) return c.run(Args(args).subspan(1));
    }
    std::fprintf(stderr, "hearth-cli: unknown command '%.*s' (try --help)\n", int(args[0].size()),
                 args[0].data());
    return 2;
}
