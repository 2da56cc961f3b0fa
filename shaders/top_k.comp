// Router top-k (and argsort with k = width): out[r][0..k) = the indices of the k largest values of
// row r, largest first, equal values in index order (a stable sort's order). One workgroup per row
// (r = x + y * numGroups.x) stages the row in shared memory; each value's rank is the count of
// values ahead of it, and the value lands at out[rank] when rank < k.
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { float x[]; }; // [rows][width]
layout(std430, binding = 1) writeonly buffer Out { int o[]; }; // [rows][k]
layout(push_constant) uniform Params { uint rows; uint width; uint k; } p;

const uint MAX_WIDTH = 2048u; // the host refuses wider rows
shared float row[MAX_WIDTH];

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x, tid = gl_LocalInvocationID.x;
    if (r >= p.rows) return;
    for (uint i = tid; i < p.width; i += 64u) row[i] = x[r * p.width + i];
    barrier();
    for (uint i = tid; i < p.width; i += 64u) {
        const float v = row[i];
        uint rank = 0u;
        for (uint j = 0u; j < p.width; ++j) {
            const float u = row[j];
            rank += (u > v || (u == v && j < i)) ? 1u : 0u;
        }
        if (rank < p.k) o[r * p.k + rank] = int(i);
    }
}
