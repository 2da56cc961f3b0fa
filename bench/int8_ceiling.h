// The per-core ceilings of the 256-bit integer product forms (int8_ceiling.cpp), for bench_matmul.
#pragma once

#include <string>
#include <vector>

namespace hearth::bench {

struct CeilingRate {
    std::string key;  // wide, wide-bcast, sign, small, vnni
    std::string form; // the instructions per product, and who uses them
    double gmacs = 0; // multiply-accumulates per second, in billions, one thread
};

// Every form this CPU runs (none without AVX2; vnni only with AVX-VNNI), each timed for `budget`
// seconds on the calling thread.
std::vector<CeilingRate> int8Ceilings(double budget);

} // namespace hearth::bench
