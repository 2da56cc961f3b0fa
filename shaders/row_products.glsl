// The row form's inner product (matmul_rows.comp, matmul_id_rows.comp): an invocation's NR weight
// rows against up to TT activation rows, each weight row read a chunk of 32 at a time (dqChunk),
// each activation row's 32 values of the chunk loaded 4 apiece by the subgroup's first 8 lanes and
// handed to every lane by subgroupBroadcast (a register shuffle on CPU implementations, where loads
// whose address differs between lanes are slow). The includer defines NR and TT, binds x[] and
// includes dequant.glsl (a type with a chunk reader) and matmul_params.glsl or its own push
// constants with p.cols.

// acc[i][t] += the row at rowBase[i] . x row xRow[t], for t < count (the same in every lane: every
// lane must take part in the broadcasts). Each broadcast activation feeds all NR rows' products.
void rowProductsN(uint rowBase[NR], uint xRow[TT], uint count, inout float acc[NR][TT]) {
    const uint part = gl_SubgroupInvocationID & 7u;
    for (uint c = 0u; c < p.cols / 32u; ++c) {
        float v[NR][32];
        for (uint i = 0u; i < NR; ++i) dqChunk(rowBase[i], c, v[i]);
        for (uint t = 0u; t < TT; ++t) {
            if (t >= count) break;
            const uint xb = xRow[t] * p.cols + 32u * c + 4u * part;
            const vec4 xq = vec4(x[xb], x[xb + 1u], x[xb + 2u], x[xb + 3u]);
            float s[NR];
            for (uint i = 0u; i < NR; ++i) s[i] = 0.0;
#define HEARTH_STEP_N(L)                                                                           \
    {                                                                                              \
        const vec4 b = subgroupBroadcast(xq, L);                                                   \
        for (uint i = 0u; i < NR; ++i)                                                             \
            s[i] += v[i][4u * L] * b.x + v[i][4u * L + 1u] * b.y + v[i][4u * L + 2u] * b.z +       \
                    v[i][4u * L + 3u] * b.w;                                                       \
    }
            HEARTH_STEP_N(0u) HEARTH_STEP_N(1u) HEARTH_STEP_N(2u) HEARTH_STEP_N(3u)
            HEARTH_STEP_N(4u) HEARTH_STEP_N(5u) HEARTH_STEP_N(6u) HEARTH_STEP_N(7u)
#undef HEARTH_STEP_N
            for (uint i = 0u; i < NR; ++i) acc[i][t] += s[i];
        }
    }
}
