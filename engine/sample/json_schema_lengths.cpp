// String lengths on grammar expressions: the range of lengths an expression's strings have, and
// an expression narrowed to strings within [lo, hi] code points (a `format` with `minLength` /
// `maxLength`), by splitting the length budget over its sequences and repetitions.
#include "sample/json_schema.h"

#include <algorithm>

namespace hearth::grammar::schema {

namespace {

constexpr int64_t kUnbounded = -1;
// Sequences and repetitions this deep or shallower offer several budget splits as alternatives.
constexpr int kSplitDepth = 3;

Expr narrowed(const Expr& e, int64_t lo, int64_t hi, int depth);

int64_t literalCodePoints(const std::string& utf8) {
    int64_t n = 0;
    for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
    return n;
}

int64_t addMaxLength(int64_t a, int64_t b) { return a < 0 || b < 0 ? kUnbounded : a + b; }

bool rangeFitsWithin(const LengthRange& r, int64_t lo, int64_t hi) {
    return r.min >= lo && (hi < 0 || (r.max >= 0 && r.max <= hi));
}

// How far each item of a sequence may grow past its shortest: `slack` shared out evenly among
// the items that can grow (each at most its own span), rounds repeated until it is spent.
std::vector<int64_t> shareLengthSlack(const std::vector<LengthRange>& ranges, int64_t slack) {
    std::vector<int64_t> extra(ranges.size(), 0);
    for (int round = 0; round < 64 && slack > 0; ++round) {
        std::vector<size_t> open;
        for (size_t i = 0; i < ranges.size(); ++i)
            if (ranges[i].max < 0 || ranges[i].min + extra[i] < ranges[i].max) open.push_back(i);
        if (open.empty()) break;
        const int64_t each = std::max<int64_t>(1, slack / int64_t(open.size()));
        for (size_t i : open) {
            if (slack == 0) break;
            int64_t give = std::min(each, slack);
            if (ranges[i].max >= 0) give = std::min(give, ranges[i].max - ranges[i].min - extra[i]);
            extra[i] += give;
            slack -= give;
        }
    }
    return extra;
}

// One split of a sequence's budget: `favoured` (an item index, or -1) first takes half the slack.
Expr splitSeqLength(const Expr& e, int64_t lo, int64_t hi, int depth, int64_t favoured) {
    std::vector<LengthRange> ranges;
    int64_t sumMin = 0;
    for (const Expr& x : e.items) {
        ranges.push_back(lengthRange(x));
        sumMin += ranges.back().min;
    }
    // Upper bounds: each item's shortest plus its share of what hi leaves.
    std::vector<int64_t> his(ranges.size());
    if (hi >= 0) {
        if (sumMin > hi) return nothing();
        int64_t slack = hi - sumMin, first = 0;
        if (favoured >= 0) {
            const LengthRange& f = ranges[size_t(favoured)];
            first = f.max < 0 ? slack / 2 : std::min(slack / 2, f.max - f.min);
            slack -= first;
        }
        std::vector<LengthRange> rest = ranges;
        if (favoured >= 0) {
            rest[size_t(favoured)].min += first;
        }
        const std::vector<int64_t> extra = shareLengthSlack(rest, slack);
        for (size_t i = 0; i < ranges.size(); ++i) his[i] = rest[i].min + extra[i];
    } else {
        for (size_t i = 0; i < ranges.size(); ++i) his[i] = ranges[i].max;
    }
    // Lower bounds: the items' shortest, raised in order until they add up to lo.
    std::vector<int64_t> los(ranges.size());
    int64_t deficit = lo - sumMin;
    for (size_t i = 0; i < ranges.size(); ++i) {
        los[i] = ranges[i].min;
        if (deficit <= 0) continue;
        const int64_t room = his[i] < 0 ? deficit : std::min(deficit, his[i] - los[i]);
        los[i] += room;
        deficit -= room;
    }
    if (deficit > 0) return nothing();
    std::vector<Expr> items;
    for (size_t i = 0; i < e.items.size(); ++i) items.push_back(narrowed(e.items[i], los[i], his[i], depth + 1));
    return seq(std::move(items));
}

// A sequence within [lo, hi]: the budget split evenly, and (shallow sequences of a few growing
// items) also once in favour of each growing item, as alternatives, so that one long part (an
// email's local part) still fits beside short ones.
Expr narrowSeqLength(const Expr& e, int64_t lo, int64_t hi, int depth) {
    std::vector<Expr> splits{splitSeqLength(e, lo, hi, depth, -1)};
    std::vector<int64_t> growing;
    for (size_t i = 0; i < e.items.size(); ++i) {
        const LengthRange r = lengthRange(e.items[i]);
        if (r.max < 0 || r.max > r.min) growing.push_back(int64_t(i));
    }
    if (hi >= 0 && depth < kSplitDepth && growing.size() > 1 && growing.size() <= 4)
        for (int64_t i : growing) splits.push_back(splitSeqLength(e, lo, hi, depth, i));
    return alt(std::move(splits));
}

// x{a,b} within [lo, hi] with items of at most hi / parts each, as many items as fit, each item
// narrowed alike.
Expr splitRepeatLength(const Expr& e, int64_t lo, int64_t hi, int depth, int64_t parts) {
    const Expr& x = e.items[0];
    const LengthRange r = lengthRange(x);
    const int64_t itemMin = std::max<int64_t>(r.min, 1);
    int64_t itemHi = r.max;
    int64_t countMax = e.max;
    if (hi >= 0) {
        itemHi = std::max(itemMin, hi / std::max(parts, std::max<int64_t>(e.min, 1)));
        if (r.max >= 0) itemHi = std::min(itemHi, r.max);
        countMax = hi / itemHi;
        if (e.max >= 0) countMax = std::min(countMax, e.max);
    }
    if (countMax < e.min) return nothing();
    // Enough items, each long enough, to reach lo.
    int64_t countMin = e.min, itemLo = r.min;
    if (lo > 0) {
        if (countMin == 0) countMin = 1;
        if (itemHi >= 0 && countMax >= 0) countMin = std::max(countMin, (lo + itemHi - 1) / itemHi);
        if (countMax >= 0 && countMin > countMax) return nothing();
        itemLo = std::max(r.min, (lo + countMin - 1) / countMin);
        if (itemHi >= 0 && itemLo > itemHi) return nothing();
    }
    Expr item = narrowed(x, itemLo, itemHi, depth + 1);
    if (item.isNothing()) return countMin == 0 ? empty() : nothing();
    return rep(std::move(item), countMin, countMax);
}

// A repetition within [lo, hi]: items of up to a quarter of the budget (a domain keeps room for
// several labels), and for shallow ones also up to all or half of it (one long dot-atom), as
// alternatives.
Expr narrowRepeatLength(const Expr& e, int64_t lo, int64_t hi, int depth) {
    std::vector<Expr> splits;
    for (int64_t parts : {int64_t(4), int64_t(2), int64_t(1)}) {
        if (parts < 4 && (depth >= kSplitDepth || hi < 0)) break;
        if (e.max >= 0 && parts > e.max) continue;
        splits.push_back(splitRepeatLength(e, lo, hi, depth, parts));
    }
    if (splits.empty()) splits.push_back(splitRepeatLength(e, lo, hi, depth, std::max<int64_t>(e.max, 1)));
    return alt(std::move(splits));
}

} // namespace

LengthRange lengthRange(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Empty: return {0, 0};
    case Expr::Kind::Literal: {
        const int64_t n = literalCodePoints(e.text);
        return {n, n};
    }
    case Expr::Kind::Class: return {1, 1};
    case Expr::Kind::Ref: return e.text == "char" ? LengthRange{1, 1} : LengthRange{0, kUnbounded};
    case Expr::Kind::Seq: {
        LengthRange out{0, 0};
        for (const Expr& x : e.items) {
            const LengthRange r = lengthRange(x);
            out.min += r.min;
            out.max = addMaxLength(out.max, r.max);
        }
        return out;
    }
    case Expr::Kind::Alt: {
        if (e.items.empty()) return {0, 0};
        LengthRange out = lengthRange(e.items[0]);
        for (size_t i = 1; i < e.items.size(); ++i) {
            const LengthRange r = lengthRange(e.items[i]);
            out.min = std::min(out.min, r.min);
            out.max = out.max < 0 || r.max < 0 ? kUnbounded : std::max(out.max, r.max);
        }
        return out;
    }
    case Expr::Kind::Repeat: {
        const LengthRange r = lengthRange(e.items[0]);
        const int64_t max = e.max < 0 || r.max < 0 ? (r.max == 0 ? 0 : kUnbounded) : r.max * e.max;
        return {r.min * e.min, max};
    }
    }
    return {0, kUnbounded};
}

namespace {

Expr narrowed(const Expr& e, int64_t lo, int64_t hi, int depth) {
    if (hi >= 0 && lo > hi) return nothing();
    const LengthRange r = lengthRange(e);
    if ((r.max >= 0 && r.max < lo) || (hi >= 0 && r.min > hi)) return nothing();
    if (rangeFitsWithin(r, lo, hi)) return e;
    switch (e.kind) {
    case Expr::Kind::Alt: {
        std::vector<Expr> kept;
        for (const Expr& x : e.items) kept.push_back(narrowed(x, lo, hi, depth));
        return alt(std::move(kept));
    }
    case Expr::Kind::Seq: return narrowSeqLength(e, lo, hi, depth);
    case Expr::Kind::Repeat: return narrowRepeatLength(e, lo, hi, depth);
    default: return nothing(); // a rule of unknown length: nothing narrower can be said
    }
}

} // namespace

Expr withinLength(const Expr& e, int64_t lo, int64_t hi) { return narrowed(e, lo, hi, 0); }

} // namespace hearth::grammar::schema
