// Parse-stack sets of a grammar and their byte transitions. A stack is a chain of frames, the top
// one a character class to match next; a multi-byte UTF-8 character is read a byte at a time, its
// bytes so far kept in the top frame and checked for a completion the class would accept.
#include "sample/grammar_matcher.h"

#include <algorithm>

namespace hearth::grammar {

namespace {

// partial: bits 0-20 the code point bits read so far, 21-22 continuation bytes still to come,
// 23-24 the character's length in bytes minus one.
uint32_t packPartial(uint32_t acc, uint32_t rem, uint32_t len) { return acc | (rem << 21) | ((len - 1) << 23); }
uint32_t partialAcc(uint32_t p) { return p & 0x1FFFFF; }
uint32_t partialRem(uint32_t p) { return (p >> 21) & 3; }
uint32_t partialLen(uint32_t p) { return ((p >> 23) & 3) + 1; }

uint32_t minCodePoint(uint32_t len) { return len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000; }

} // namespace

size_t StackSpace::VecHash::operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ull ^ v.size();
    for (int32_t x : v) h = (h ^ uint32_t(x)) * 0x100000001b3ull;
    return size_t(h);
}

StackSpace::StackSpace(std::shared_ptr<const Grammar> grammar) : m_grammar(std::move(grammar)) { reset(); }

void StackSpace::reset() {
    m_nodes.assign(1, Node{0, 0, 0}); // id 0: the empty stack
    m_nodeIndex.clear();
    m_sets.assign(1, {}); // id 0: the dead set
    m_setIndex.clear();
    m_trans.clear();
    m_trans.emplace_back();
    m_seenMark.clear();
    m_initial = -1;
}

int32_t StackSpace::node(uint32_t pos, int32_t parent, uint32_t partial) {
    const NodeKey key{(uint64_t(pos) << 32) | uint32_t(parent), partial};
    auto [it, inserted] = m_nodeIndex.try_emplace(key, int32_t(m_nodes.size()));
    if (inserted) m_nodes.push_back({pos, parent, partial});
    return it->second;
}

void StackSpace::closure(int32_t start, std::vector<int32_t>& out) {
    const Grammar& g = *m_grammar;
    if (++m_mark == 0) {
        std::fill(m_seenMark.begin(), m_seenMark.end(), 0u);
        m_mark = 1;
    }
    m_work.clear();
    m_work.push_back(start);
    while (!m_work.empty()) {
        const int32_t n = m_work.back();
        m_work.pop_back();
        ++m_steps;
        if (n == 0) {
            out.push_back(0);
            continue;
        }
        if (m_seenMark.size() < m_nodes.size()) m_seenMark.resize(m_nodes.size() * 2, 0u);
        if (m_seenMark[size_t(n)] == m_mark) continue;
        m_seenMark[size_t(n)] = m_mark;
        const Node nd = m_nodes[size_t(n)];
        if (nd.partial != 0) {
            out.push_back(n);
            continue;
        }
        const Element& e = g.elements[nd.pos];
        switch (e.kind) {
        case ElementKind::Char:
            out.push_back(n);
            break;
        case ElementKind::End:
            m_work.push_back(nd.parent);
            break;
        case ElementKind::Rule: {
            // A reference in tail position returns straight to the frame below (no growth).
            const uint32_t ret = nd.pos + 1;
            const int32_t cont = g.elements[ret].kind == ElementKind::End ? nd.parent : node(ret, nd.parent, 0);
            for (uint32_t alt : g.alternatives[e.rule]) m_work.push_back(node(alt, cont, 0));
            break;
        }
        }
    }
}

int32_t StackSpace::internSet(std::vector<int32_t>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    if (stacks.empty() || stacks.size() > kMaxSetSize) return kDeadSet;
    auto [it, inserted] = m_setIndex.try_emplace(stacks, int32_t(m_sets.size()));
    if (inserted) {
        m_sets.push_back(stacks);
        m_trans.emplace_back();
    }
    return it->second;
}

int32_t StackSpace::initialSet() {
    if (m_initial >= 0) return m_initial;
    std::vector<int32_t> out;
    for (uint32_t alt : m_grammar->alternatives[m_grammar->root]) closure(node(alt, 0, 0), out);
    m_initial = internSet(out);
    return m_initial;
}

bool StackSpace::feasible(uint32_t pos, uint32_t lo, uint32_t hi) const {
    hi = std::min(hi, 0x10FFFFu);
    if (lo > hi) return false;
    // Surrogates are not characters: look at the parts of [lo, hi] around them.
    if (lo < 0xD800 && m_grammar->matchesSome(pos, lo, std::min(hi, 0xD7FFu))) return true;
    if (hi > 0xDFFF && m_grammar->matchesSome(pos, std::max(lo, 0xE000u), hi)) return true;
    return false;
}

int32_t StackSpace::computeAdvance(int32_t set, uint8_t byte) {
    const Grammar& g = *m_grammar;
    std::vector<int32_t> out;
    const std::vector<int32_t> stacks = m_sets[size_t(set)]; // a copy: interning may grow m_sets
    m_steps += stacks.size();
    for (int32_t s : stacks) {
        if (s == 0) continue;
        const Node n = m_nodes[size_t(s)];
        if (n.partial == 0) {
            if (byte < 0x80) {
                if (g.matches(n.pos, byte)) closure(node(n.pos + 1, n.parent, 0), out);
                continue;
            }
            uint32_t len = 0, acc = 0;
            if (byte >= 0xC2 && byte <= 0xDF) len = 2, acc = byte & 0x1F;
            else if (byte >= 0xE0 && byte <= 0xEF) len = 3, acc = byte & 0x0F;
            else if (byte >= 0xF0 && byte <= 0xF4) len = 4, acc = byte & 0x07;
            else continue; // not a lead byte
            const uint32_t rem = len - 1, shift = 6 * rem;
            const uint32_t lo = std::max(acc << shift, minCodePoint(len));
            const uint32_t hi = (acc << shift) | ((1u << shift) - 1);
            if (feasible(n.pos, lo, hi)) out.push_back(node(n.pos, n.parent, packPartial(acc, rem, len)));
            continue;
        }
        if ((byte & 0xC0) != 0x80) continue;
        const uint32_t acc = (partialAcc(n.partial) << 6) | (byte & 0x3F);
        const uint32_t rem = partialRem(n.partial) - 1, len = partialLen(n.partial);
        if (rem == 0) {
            const bool valid = acc >= minCodePoint(len) && acc <= 0x10FFFF && (acc < 0xD800 || acc > 0xDFFF);
            if (valid && g.matches(n.pos, acc)) closure(node(n.pos + 1, n.parent, 0), out);
            continue;
        }
        const uint32_t shift = 6 * rem;
        const uint32_t lo = std::max(acc << shift, minCodePoint(len));
        const uint32_t hi = (acc << shift) | ((1u << shift) - 1);
        if (feasible(n.pos, lo, hi)) out.push_back(node(n.pos, n.parent, packPartial(acc, rem, len)));
    }
    const int32_t next = internSet(out);
    auto& table = m_trans[size_t(set)];
    if (!table) {
        table = std::make_unique<std::array<int32_t, 256>>();
        table->fill(-1);
    }
    (*table)[byte] = next;
    return next;
}

bool StackSpace::accepts(int32_t set) const {
    const auto& s = m_sets[size_t(set)];
    return !s.empty() && s.front() == 0;
}

bool StackSpace::complete(int32_t set) const {
    const auto& s = m_sets[size_t(set)];
    return s.size() == 1 && s.front() == 0;
}

int32_t StackSpace::rebase(int32_t set) {
    std::vector<std::vector<Node>> chains; // each stack's frames, top first
    for (int32_t s : m_sets[size_t(set)]) {
        std::vector<Node> frames;
        for (int32_t n = s; n != 0; n = m_nodes[size_t(n)].parent) frames.push_back(m_nodes[size_t(n)]);
        chains.push_back(std::move(frames));
    }
    reset();
    std::vector<int32_t> stacks;
    for (const auto& frames : chains) {
        int32_t parent = 0;
        for (auto it = frames.rbegin(); it != frames.rend(); ++it) parent = node(it->pos, parent, it->partial);
        stacks.push_back(parent);
    }
    return internSet(stacks);
}

TextMatch matchText(const Grammar& grammar, std::string_view text) {
    StackSpace space(std::shared_ptr<const Grammar>(std::shared_ptr<const Grammar>(), &grammar));
    int32_t set = space.initialSet();
    for (char c : text) {
        if (set == kDeadSet) return TextMatch::Rejected;
        set = space.advance(set, static_cast<uint8_t>(c));
    }
    if (set == kDeadSet) return TextMatch::Rejected;
    return space.accepts(set) ? TextMatch::Complete : TextMatch::Prefix;
}

} // namespace hearth::grammar
