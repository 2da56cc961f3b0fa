// hearth-cli selftest: runs every op of the step graph on a device and on the scalar reference and
// prints how far apart they are, one line per case (or JSON), so that a device can be checked
// before it is trusted with a model.
#include "commands.h"

#include "hearth/selftest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace hearth::cli {

namespace {

constexpr const char* kUsage =
    "usage: hearth-cli selftest [--device ID] [--isa LEVEL] [--json] [--quick] [--seed N]\n"
    "\n"
    "Runs every op of the step graph (each weight type, K/V type, RoPE and attention variant,\n"
    "odd shapes) on a device and on the scalar reference, and compares the results.\n"
    "  --device ID  cpu (default), ref, vulkan:N or cuda:N ('hearth-cli devices' lists them)\n"
    "  --isa LEVEL  device cpu: the kernels' instruction-set level, scalar, avx2, avxvnni or avx512\n"
    "               (one this CPU runs), or all (the default): every level this CPU runs in turn\n"
    "  --json       {\"device\", \"isa_levels\", \"ops\": [{op, type, shape, max_err, tol, ok, supported,\n"
    "               isa (device cpu)}...]}\n"
    "  --quick      the subset a typical model uses, small shapes (what a load checks a GPU with)\n"
    "  --seed N     the random data and shapes (default 1)\n"
    "max_err is max |device - reference| / max(1, max |reference|), the fraction of wrong indices\n"
    "for top_k and argsort. Cases the device does not run are listed as unsupported.\n"
    "Loading a model runs --quick on a GPU first and falls back to the CPU when it fails;\n"
    "HEARTH_SKIP_DEVICE_CHECK=1 skips that check.\n"
    "Exit status: 0 every supported case agrees, 1 some case does not, 2 bad usage or a device\n"
    "that cannot be opened.\n";

int usageError(const std::string& message) {
    std::fprintf(stderr, "hearth-cli selftest: %s\n%s", message.c_str(), kUsage);
    return 2;
}

std::string sci(double v) {
    if (!std::isfinite(v)) return "inf";
    if (v == 0.0) return "0";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2e", v);
    return buf;
}

} // namespace

int runSelftest(Args args) {
    std::string deviceId = "cpu";
    std::string isa = "all";
    bool json = false;
    SelftestOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view a = args[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "--json") {
            json = true;
        } else if (a == "--quick") {
            options.quick = true;
        } else if (a == "--device" || a == "--seed" || a == "--isa") {
            if (i + 1 >= args.size()) return usageError(std::string(a) + " needs a value");
            const std::string value(args[++i]);
            if (a == "--device") {
                deviceId = value;
            } else if (a == "--isa") {
                isa = value;
            } else {
                if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos)
                    return usageError("--seed takes a non-negative integer, not '" + value + "'");
                options.seed = std::stoull(value);
            }
        } else {
            return usageError("unknown argument '" + std::string(a) + "'");
        }
    }

    // The CPU's levels to run: each in turn, or the one named.
    std::vector<std::string> levels{""};
    if (deviceId == "cpu") {
        const std::vector<std::string> have = cpuIsaLevels();
        if (isa == "all") {
            levels = have;
        } else if (std::find(have.begin(), have.end(), isa) != have.end()) {
            levels = {isa};
        } else {
            std::string list;
            for (const std::string& l : have) list += (list.empty() ? "" : ", ") + l;
            return usageError("--isa " + isa + ": not a level this CPU runs (" + list + ", or all)");
        }
    } else if (isa != "all") {
        return usageError("--isa is for --device cpu");
    }

    std::vector<SelftestReport> reports;
    for (const std::string& level : levels) {
        options.cpuIsa = level;
        auto report = runDeviceSelftest(deviceId, options);
        if (!report) {
            // The cases could not be built (a bug): 1; the device cannot be opened: 2.
            const bool bug = report.status().code() == ErrorCode::Internal;
            std::fprintf(stderr, "hearth-cli selftest: %s%s\n", bug ? "" : ("cannot open device '" + deviceId + "': ").c_str(),
                         report.status().toString().c_str());
            return bug ? 1 : 2;
        }
        reports.push_back(std::move(*report));
    }
    bool passed = true;
    for (const SelftestReport& r : reports) passed = passed && r.passed();
    if (json) {
        const SelftestReport& last = reports.back();
        nlohmann::json out{{"device", last.device},
                           {"device_name", last.deviceName},
                           {"isa_levels", nlohmann::json::array()},
                           {"ops", nlohmann::json::array()},
                           {"failures", 0},
                           {"unsupported", 0},
                           {"not_quantizable", last.notQuantizable},
                           {"seconds", 0.0}};
        int failures = 0, unsupported = 0;
        double seconds = 0.0;
        for (const SelftestReport& r : reports) {
            if (!r.cpuIsa.empty()) out["isa_levels"].push_back(r.cpuIsa);
            failures += r.failures();
            unsupported += r.unsupportedCount();
            seconds += r.seconds;
            for (const SelftestCase& c : r.cases) {
                nlohmann::json o{{"op", c.op},      {"type", c.type}, {"shape", c.shape},           {"max_err", c.maxErr},
                                 {"tol", c.tol},    {"ok", c.ok},     {"supported", c.supported}, {"seconds", c.seconds}};
                if (!std::isfinite(c.maxErr)) o["max_err"] = nullptr;
                if (!c.error.empty()) o["error"] = c.error;
                if (!r.cpuIsa.empty()) o["isa"] = r.cpuIsa;
                out["ops"].push_back(std::move(o));
            }
        }
        out["failures"] = failures;
        out["unsupported"] = unsupported;
        out["seconds"] = seconds;
        std::printf("%s\n", out.dump(2).c_str());
        return passed ? 0 : 1;
    }
    for (const SelftestReport& r : reports) {
        std::printf("device %s: %s\n", r.device.c_str(), r.deviceName.c_str());
        std::printf("%-11s %-5s %-62s %9s %9s  %s\n", "OP", "TYPE", "SHAPE", "MAX_ERR", "TOL", "RESULT");
        for (const SelftestCase& c : r.cases) {
            const char* result = !c.supported ? "unsupported" : c.ok ? "ok" : "FAIL";
            std::printf("%-11s %-5s %-62s %9s %9s  %s", c.op.c_str(), c.type.c_str(), c.shape.c_str(),
                        c.supported ? sci(c.maxErr).c_str() : "-", sci(c.tol).c_str(), result);
            if (!c.error.empty()) std::printf(" (%s)", c.error.c_str());
            std::printf("\n");
        }
        const int total = int(r.cases.size()), failed = r.failures(), skipped = r.unsupportedCount();
        std::printf("%d cases%s%s: %d ok, %d FAIL, %d unsupported (%.2f s)\n", total, r.cpuIsa.empty() ? "" : " at ",
                    r.cpuIsa.c_str(), total - failed - skipped, failed, skipped, r.seconds);
        if (!r.notQuantizable.empty()) {
            std::string list;
            for (const std::string& t : r.notQuantizable) list += (list.empty() ? "" : " ") + t;
            std::printf("not tested (no quantizer): %s\n", list.c_str());
        }
        if (failed) {
            std::string list;
            for (const std::string& f : r.failing()) list += (list.empty() ? "" : ", ") + f;
            std::printf("FAILED%s%s: %s\n", r.cpuIsa.empty() ? "" : " at ", r.cpuIsa.c_str(), list.c_str());
        }
    }
    if (reports.size() > 1) {
        std::string summary;
        for (const SelftestReport& r : reports)
            summary += (summary.empty() ? "" : ", ") + r.cpuIsa + (r.passed() ? " ok" : " FAIL");
        std::printf("CPU levels: %s\n", summary.c_str());
    }
    return passed ? 0 : 1;
}

} // namespace hearth::cli
