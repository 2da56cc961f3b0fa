// Handing pages of weights back to the kernel without changing what reading them gives: for
// matrices whose repacked copy replaced them, and for the token-embedding table between lookups.
#pragma once

#include <cstdint>

namespace hearth::cpu {

// Whether p lies in a mapping of a file (/proc/self/maps: a non-zero inode).
bool fileBacked(const void* p);

// Hands the whole pages inside [p, p + bytes) back to the kernel; reading them afterwards gives
// the same bytes. fromFile (a read-only file mapping): unmapped from this process (MADV_DONTNEED;
// the pages stay in the page cache, and a read faults them back in). Otherwise paged out
// (MADV_PAGEOUT: contents kept, swapped if there is swap). Never pass fromFile for memory that is
// not a file mapping: MADV_DONTNEED zeroes anonymous memory.
void releasePages(const uint8_t* p, uint64_t bytes, bool fromFile);

} // namespace hearth::cpu
