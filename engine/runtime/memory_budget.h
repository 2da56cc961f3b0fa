// How much memory the KV cache may take when the user sets no budget.
#pragma once

#include <cstdint>

namespace hearth::runtime {

// Bytes the OS says can be allocated now without swapping (MemAvailable), 0 when unknown.
uint64_t availableMemoryBytes();

// Enough for maxNumSeqs sequences of the full context, at most a quarter of the available
// memory, but never less than one full-context sequence.
uint64_t autoKvBudget(uint64_t bytesPerBlock, int blockSize, int contextLength, int maxNumSeqs);

} // namespace hearth::runtime
