// The subcommands of hearth-cli. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 failure while working, 2 bad input (usage, unreadable file).
#pragma once

#include "../common/option_values.h"

#include <cstdint>
#include <span>
#include <string_view>

namespace hearth::cli {

using options::parseByteSize;
using options::parseInt;
using options::parseReal;

using Args = std::span<const std::string_view>;

struct Command {
    std::string_view name;
    std::string_view summary;
    int (*run)(Args args);
};

// All subcommands, in the order `hearth-cli --help` lists them.
std::span<const Command> commands();

} // namespace hearth::cli
