// The expert routing table of a tiled mat_mul_id, built by one workgroup from ids [n][k]:
// route[e] = how many (token, slot) pairs chose expert e, route[nExp + e] = where expert e's pairs
// start in the list at route[2 nExp], which holds the pair indices t * k + slot grouped by expert
// (in pair order within one). Indices outside [0, nExp) are left out.
#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Ids { int ids[]; }; // [n][k]
layout(std430, binding = 1) coherent buffer Route { uint route[]; }; // [2 nExp + n k]
layout(push_constant) uniform Params { uint pairs; uint nExp; } p;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    for (uint e = tid; e < p.nExp; e += 256u) {
        uint c = 0u;
        for (uint j = 0u; j < p.pairs; ++j) c += ids[j] == int(e) ? 1u : 0u;
        route[e] = c;
    }
    memoryBarrierBuffer();
    barrier();
    if (tid == 0u) {
        uint start = 0u;
        for (uint e = 0u; e < p.nExp; ++e) {
            route[p.nExp + e] = start;
            start += route[e];
        }
    }
    memoryBarrierBuffer();
    barrier();
    for (uint e = tid; e < p.nExp; e += 256u) {
        uint at = 2u * p.nExp + route[p.nExp + e];
        for (uint j = 0u; j < p.pairs; ++j)
            if (ids[j] == int(e)) route[at++] = j;
    }
}
