// K/V cache element access for paged blocks: slot-major rows of rowSize values stored as F32
// (KV_F32) or as packed F16 pairs (KV_F16). Expects the cache declared as `cache` arrays.
#if defined(KV_F32)
#define KV_WORD float
#define KV_LOAD(arr, idx) arr[idx]
#elif defined(KV_F16)
#define KV_WORD uint
#define KV_LOAD(arr, idx) unpackHalf2x16(arr[(idx) >> 1])[(idx) & 1u]
#else
#error "define KV_F32 or KV_F16"
#endif
