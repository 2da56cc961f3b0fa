// hearth-cli devices: lists the compute devices this binary can use (the CPU, and each Vulkan or
// CUDA device its backends find) with their memory, and notes on backends that found none.
#include "commands.h"

#include "hearth/devices.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace hearth::cli {

namespace {

constexpr const char* kUsage =
    "usage: hearth-cli devices [--json]\n"
    "\n"
    "Lists the compute devices: id (what --device and the settings take), name, type, total and\n"
    "free memory. Backends that are absent or find no device say why in a note.\n"
    "Exit status: 0 listed, 2 bad usage.\n";

std::string mib(uint64_t bytes) {
    if (bytes == 0) return "?";
    return std::to_string(bytes >> 20) + " MiB";
}

} // namespace

int runDevices(Args args) {
    bool json = false;
    for (std::string_view a : args) {
        if (a == "--json") {
            json = true;
        } else if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "hearth-cli devices: unknown argument '%.*s'\n%s", int(a.size()), a.data(), kUsage);
            return 2;
        }
    }
    const DeviceList list = listDevices();
    if (json) {
        nlohmann::json out{{"devices", nlohmann::json::array()}, {"notes", list.notes}};
        for (const DeviceDescription& d : list.devices)
            out["devices"].push_back({{"id", d.id},
                                      {"kind", deviceKindName(d.kind)},
                                      {"index", d.index},
                                      {"name", d.name},
                                      {"type", d.type},
                                      {"total_memory", d.totalMemory},
                                      {"free_memory", d.freeMemory},
                                      {"shares_host_memory", d.sharesHostMemory}});
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    std::printf("%-10s %-12s %12s %12s  %s\n", "ID", "TYPE", "MEMORY", "FREE", "NAME");
    for (const DeviceDescription& d : list.devices)
        std::printf("%-10s %-12s %12s %12s  %s%s\n", d.id.c_str(), d.type.c_str(), mib(d.totalMemory).c_str(),
                    mib(d.freeMemory).c_str(), d.name.c_str(),
                    d.kind != DeviceKind::Cpu && d.sharesHostMemory ? " (uses system RAM)" : "");
    for (const std::string& n : list.notes) std::printf("note: %s\n", n.c_str());
    return 0;
}

} // namespace hearth::cli
