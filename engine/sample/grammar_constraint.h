// A grammar applied to generation: the vocabulary as a byte trie (built once per tokenizer), and
// per sequence the grammar's state with the mask of tokens that may come next, found by walking
// the trie through the memoised byte transitions and cached per parse state.
#pragma once

#include "hearth/tokenizer.h"
#include "sample/grammar_matcher.h"

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::grammar {

// Every token with text (control tokens have none and are never allowed by a grammar), in a trie
// over their bytes.
class TokenTrie {
public:
    static std::shared_ptr<const TokenTrie> build(const tokenizer::Tokenizer& tokenizer);

    int32_t vocabSize() const { return m_vocabSize; }
    std::string_view piece(int32_t token) const {
        return std::string_view(m_pieces).substr(m_pieceStart[size_t(token)],
                                                 m_pieceStart[size_t(token) + 1] - m_pieceStart[size_t(token)]);
    }
    size_t numNodes() const { return m_nodes.size(); }

    struct Node {
        uint32_t firstEdge = 0, numEdges = 0;   // children: m_edgeByte / m_edgeChild
        uint32_t firstToken = 0, numTokens = 0; // tokens whose bytes end here: m_tokens
    };
    const std::vector<Node>& nodes() const { return m_nodes; }
    const std::vector<uint8_t>& edgeBytes() const { return m_edgeByte; }
    const std::vector<uint32_t>& edgeChildren() const { return m_edgeChild; }
    const std::vector<int32_t>& tokens() const { return m_tokens; }

private:
    int32_t m_vocabSize = 0;
    std::string m_pieces;
    std::vector<uint32_t> m_pieceStart; // [vocab + 1]
    std::vector<Node> m_nodes;          // node 0: the root (no bytes)
    std::vector<uint8_t> m_edgeByte;
    std::vector<uint32_t> m_edgeChild;
    std::vector<int32_t> m_tokens;
};

// One generated sequence's progress through a grammar.
class GrammarConstraint {
public:
    // stopTokens: the tokens that end generation; allowed exactly when the text is a sentence.
    GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                      std::vector<int32_t> stopTokens);

    // Bit t set: token t may come next. Empty when nothing can (a dead end).
    std::span<const uint64_t> allowed();
    bool anyAllowed();
    // Moves past `token`; an error when the grammar does not allow it.
    Status accept(int32_t token);
    // The text is a sentence that nothing may extend: generation should end.
    bool complete() const { return m_space.complete(m_set); }
    bool accepting() const { return m_space.accepts(m_set); }

private:
    struct CachedMask {
        int32_t set;
        std::vector<uint64_t> bits;
        bool any;
    };
    const CachedMask& maskFor(int32_t set);

    StackSpace m_space;
    std::shared_ptr<const TokenTrie> m_trie;
    std::vector<int32_t> m_stopTokens;
    int32_t m_set;
    std::list<CachedMask> m_masks; // most recent first
    std::vector<std::pair<uint32_t, int32_t>> m_walk; // trie walk: (node, set)
};

} // namespace hearth::grammar
