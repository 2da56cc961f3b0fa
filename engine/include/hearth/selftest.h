// The device self-test behind `hearth-cli selftest`: every op of the engine's op set (every weight
// type, K/V type, RoPE and attention variant, odd shapes) run as small graphs on a device and on
// the scalar reference, with how far the device's results are from the reference's per case.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hearth {

struct SelftestOptions {
    // A representative subset (the ops and weight types of a typical llama/qwen/gemma step,
    // small shapes): well under 2 s on a GPU.
    bool quick = false;
    // Drives the random data and the random shapes; a seed always gives the same cases.
    uint64_t seed = 1;
    // Device "cpu": the kernels' instruction-set level for this run ("scalar", "avx2", "avxvnni",
    // "avx512"; see cpuIsaLevels); empty: the active level (HEARTH_CPU_ISA, or the best).
    std::string cpuIsa;
    // Only part `part` (0 .. parts - 1) of the cases: their distinct types dealt out in turn, in
    // the order the cases are built, so that each weight type's kernels (a GPU's pipelines, built
    // on first use) are built in one part only. parts 1: every case.
    int part = 0;
    int parts = 1;
};

struct SelftestCase {
    std::string op;     // the op under test ("mat_mul")
    std::string type;   // the weight type ("Q4_K"), the K/V type ("F16"), or "F32"
    std::string shape;  // the case's shapes and variant ("W[256,19] x[256,3]", "neox nRot 64 ...")
    double maxErr = 0.0; // max |ours - ref| / max(1, max |ref|); for indices the wrong fraction
    double tol = 0.0;
    bool supported = true; // false: the device refused a node (or its K/V type, or a weight type)
    bool ok = true;        // within tol (always true when unsupported)
    std::string error;     // why the run failed, or why the device does not run the case
    double seconds = 0.0;  // the device's run (its kernels built on first use included)
};

struct SelftestReport {
    std::string device;     // the device's id
    std::string deviceName;
    std::string cpuIsa;     // device "cpu": the level its kernels ran at
    std::vector<SelftestCase> cases;
    // Weight types the reference cannot produce (no quantizer): not tested.
    std::vector<std::string> notQuantizable;
    double seconds = 0.0;

    int failures() const;
    int unsupportedCount() const;
    bool passed() const { return failures() == 0; }
    // The distinct "op type" names of the failing cases, in case order ("scale F32", "mat_mul Q4_K").
    std::vector<std::string> failing() const;
};

// The CPU kernels' instruction-set levels this CPU runs, lowest first ("scalar", "avx2", then
// "avxvnni" and "avx512" where the CPU has them).
std::vector<std::string> cpuIsaLevels();

// Opens the device ("cpu", "vulkan:0", "cuda:0", ...; the CPU with `threads` threads, 0: all
// cores) and runs the self-test on it (the CPU at options.cpuIsa's level, then back at the one
// before). Errors: an unknown device or one that cannot be opened; a cpuIsa that is not a level
// of this CPU (InvalidArgument).
Result<SelftestReport> runDeviceSelftest(const std::string& deviceId, const SelftestOptions& options, int threads = 0);

} // namespace hearth
