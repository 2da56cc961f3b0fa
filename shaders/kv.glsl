// K/V cache element access for paged blocks: slot-major rows of rowSize values stored as F32
// (KV_F32), as packed F16 pairs (KV_F16) or as Q8_0 blocks (KV_Q8_0: per 32 values an fp16 scale
// d and 32 int8 quants q, 34 bytes, value d * q, laid out as the CPU's PagedKvStore; rowSize a
// multiple of 32, so value idx of the cache is in block idx / 32). Expects the cache declared as
// `cache` arrays.
#if defined(KV_F32)
#define KV_WORD float
#define KV_LOAD(arr, idx) arr[idx]
#elif defined(KV_F16)
#define KV_WORD uint
#define KV_LOAD(arr, idx) unpackHalf2x16(arr[(idx) >> 1])[(idx) & 1u]
#elif defined(KV_Q8_0)
#define KV_WORD uint
// The binary16 value h (>= 0 here: no sign, inf or NaN in a scale) as a float, exact for
// subnormals too.
float kvHalfToFloat(uint h) {
    const uint e = (h >> 10) & 31u;
    return e == 0u ? float(h & 1023u) * 5.9604644775390625e-8
                   : uintBitsToFloat(((e + 112u) << 23) | ((h & 1023u) << 13));
}
// Block b's scale: halfword 17b of the cache; quant j of block b: byte 34b + 2 + j (signed).
#define KV_Q8_SCALE(arr, b) kvHalfToFloat((arr[((b) * 17u) >> 1] >> (((b) & 1u) * 16u)) & 0xffffu)
#define KV_Q8_QUANT(arr, byte) float(bitfieldExtract(int(arr[(byte) >> 2]), int(((byte) & 3u) * 8u), 8))
#define KV_LOAD(arr, idx) (KV_Q8_SCALE(arr, (idx) >> 5) * KV_Q8_QUANT(arr, ((idx) >> 5) * 34u + 2u + ((idx) & 31u)))
#else
#error "define KV_F32, KV_F16 or KV_Q8_0"
#endif
