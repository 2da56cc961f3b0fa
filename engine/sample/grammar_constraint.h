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
// over their bytes laid out in depth-first order: a walk is one forward pass over the arrays,
// jumping past a subtree (to next[i]) where the grammar refuses its first byte.
class TokenTrie {
public:
    static std::shared_ptr<const TokenTrie> build(const tokenizer::Tokenizer& tokenizer);

    int32_t vocabSize() const { return m_vocabSize; }
    std::string_view piece(int32_t token) const {
        return std::string_view(m_pieces).substr(m_pieceStart[size_t(token)],
                                                 m_pieceStart[size_t(token) + 1] - m_pieceStart[size_t(token)]);
    }
    size_t numNodes() const { return m_byte.size(); }
    size_t maxDepth() const { return m_maxDepth; }

    // Node i (0 is the root, no byte): its byte, its depth (bytes from the root), the node after
    // its subtree, and the tokens whose pieces end there (tokens()[tokenStart[i], tokenStart[i+1])).
    const std::vector<uint8_t>& bytes() const { return m_byte; }
    const std::vector<uint16_t>& depths() const { return m_depth; }
    const std::vector<uint32_t>& next() const { return m_next; }
    const std::vector<uint32_t>& tokenStart() const { return m_tokenStart; }
    const std::vector<int32_t>& tokens() const { return m_tokens; }

private:
    int32_t m_vocabSize = 0;
    std::string m_pieces;
    std::vector<uint32_t> m_pieceStart; // [vocab + 1]
    std::vector<uint8_t> m_byte;
    std::vector<uint16_t> m_depth;
    std::vector<uint32_t> m_next;
    std::vector<uint32_t> m_tokenStart; // [nodes + 1]
    std::vector<int32_t> m_tokens;
    size_t m_maxDepth = 0;
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
    std::vector<int32_t> m_walkSets;        // trie walk: the set at each depth
    std::vector<const int32_t*> m_walkRows; // and its transition row
};

} // namespace hearth::grammar
