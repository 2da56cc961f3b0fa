// Builds the grid i-quants' key-to-row maps and neighbour lists from the grid tables.
#include "quant/iq_search.h"

#include "quant/iq_grids.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace hearth::quant::detail {

namespace {

// Level index of value j of grid row e, from the table of magnitudes and its sorted levels.
GridSearch build(const grids::CodeTable& t, int nearestDistances) {
    GridSearch g;
    g.width = t.width;
    g.bits = t.bits;
    g.level.resize(size_t(t.entries) * size_t(t.width));
    const uint32_t mask = (1u << t.bits) - 1u;
    const size_t keys = size_t(1) << (t.bits * t.width);
    g.rowOfKey.assign(keys, -1);
    for (int e = 0; e < t.entries; ++e) {
        uint32_t key = 0;
        for (int j = 0; j < t.width; ++j) {
            const uint32_t l = (t.codes[e] >> (t.bits * j)) & mask;
            g.level[size_t(e) * size_t(t.width) + size_t(j)] = uint8_t(l);
            key |= l << (t.bits * j);
        }
        g.rowOfKey[key] = e;
    }
    // Every off-grid key whose level indices are all in range gets its neighbour list (keys
    // with out-of-range digits are never looked up: the searches clamp to the levels).
    std::vector<std::pair<int, int>> dist(size_t(t.entries));
    std::vector<int> lv(size_t(t.width));
    for (size_t key = 0; key < keys; ++key) {
        if (g.rowOfKey[key] >= 0) continue;
        bool inRange = true;
        for (int j = 0; j < t.width; ++j) {
            lv[size_t(j)] = int((key >> (t.bits * j)) & mask);
            inRange = inRange && lv[size_t(j)] < t.levelCount;
        }
        if (!inRange) continue;
        for (int e = 0; e < t.entries; ++e) {
            int d2 = 0;
            for (int j = 0; j < t.width; ++j) {
                const int d = int(g.level[size_t(e) * size_t(t.width) + size_t(j)]) - lv[size_t(j)];
                d2 += d * d;
            }
            dist[size_t(e)] = {d2, e};
        }
        std::sort(dist.begin(), dist.end());
        g.rowOfKey[key] = -1 - int32_t(g.near.size());
        const size_t countAt = g.near.size();
        g.near.push_back(0);
        int distinct = 1, last = dist[0].first;
        for (const auto& [d2, e] : dist) {
            if (d2 > last) {
                if (distinct == nearestDistances) break;
                last = d2;
                ++distinct;
            }
            g.near.push_back(uint16_t(e));
        }
        g.near[countAt] = uint16_t(g.near.size() - countAt - 1);
    }
    return g;
}

const grids::CodeTable& table(const char* name) {
    int count = 0;
    const grids::CodeTable* all = grids::codeTables(&count);
    for (int i = 0; i < count; ++i)
        if (std::string_view(all[i].name) == name) return all[i];
    return all[0]; // unreachable: every name below is in the table
}

} // namespace

const GridSearch& gridSearch(Grid g) {
    switch (g) {
    case Grid::Iq3xxs: {
        static const GridSearch s = build(table("iq3xxs"), 2);
        return s;
    }
    case Grid::Iq3s: {
        static const GridSearch s = build(table("iq3s"), 3);
        return s;
    }
    case Grid::Iq2xxs: {
        static const GridSearch s = build(table("iq2xxs"), 2);
        return s;
    }
    case Grid::Iq2xs: {
        static const GridSearch s = build(table("iq2xs"), 2);
        return s;
    }
    case Grid::Iq2s: {
        static const GridSearch s = build(table("iq2s"), 1);
        return s;
    }
    case Grid::Iq1s:
        break;
    }
    static const GridSearch s = build(table("iq1s"), 3);
    return s;
}

} // namespace hearth::quant::detail
