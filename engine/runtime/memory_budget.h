// How much memory the KV cache may take when the user sets no budget.
#pragma once

#include <cstdint>

namespace hearth::runtime {

// Bytes the OS says can be allocated now without swapping (MemAvailable), 0 when unknown.
uint64_t availableMemoryBytes();

// Enough for maxNumSeqs sequences of the full context, at most a quarter of the available
// memory, but never less than one full-context sequence.
uint64_t autoKvBudget(uint64_t bytesPerBlock, int blockSize, int contextLength, int maxNumSeqs);

// Hybrid models: recurrent-state slots for `live` parallel sequences of perState bytes each, with
// prefix-cache snapshots in snapshotBytes (0: a quarter of kvBudget, at least 16 states, at most
// an eighth of `available` when known; none without prefix caching, at most 4096): live slots,
// plus as many again at least (forks of n > 1 requests).
int stateSlotsFor(uint64_t perState, int live, uint64_t kvBudget, uint64_t snapshotBytes, bool prefixCaching,
                  uint64_t available);

} // namespace hearth::runtime
