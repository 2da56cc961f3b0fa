// The subcommands of hearth-cli. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 failure while working, 2 bad input (usage, unreadable file).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hearth::cli {

using Args = std::span<const std::string_view>;

struct Command {
    std::string_view name;
    std::string_view summary;
    int (*run)(Args args);
};

// "512M", "2G", "1.5GiB", "1048576" -> bytes. False for anything else.
bool parseByteSize(std::string_view text, uint64_t& bytes);

// All subcommands, in the order `hearth-cli --help` lists them.
std::span<const Command> commands();

} // namespace hearth::cli
