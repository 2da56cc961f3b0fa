// The Tokenizer facade: loading from GGUF, encoding (special tokens, BOS/EOS/SEP, SPM, BPE or
// WordPiece for the text between them) and the vocabulary accessors.
#include "hearth/tokenizer.h"

#include "hearth/gguf.h"
#include "tokenizer/bpe.h"
#include "tokenizer/special_split.h"
#include "tokenizer/spm.h"
#include "tokenizer/wpm.h"
#include "tokenizer/vocab.h"

#include <algorithm>
#include <limits>

namespace hearth::tokenizer {

Tokenizer::Tokenizer(std::shared_ptr<const detail::Vocab> vocab) : m_vocab(std::move(vocab)) {}

Result<Tokenizer> Tokenizer::fromGguf(const gguf::File& file) {
    HEARTH_ASSIGN_OR_RETURN(detail::VocabSource source, detail::readVocabSource(file));
    HEARTH_ASSIGN_OR_RETURN(std::shared_ptr<const detail::Vocab> vocab,
                            detail::buildVocab(std::move(source)));
    return Tokenizer(std::move(vocab));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool addSpecial,
                                               bool parseSpecial) const {
    const detail::Vocab& v = *m_vocab;
    if (text.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        return invalidArgument("text to tokenize is larger than 2 GiB");
    }
    std::vector<detail::Fragment> fragments;
    detail::splitSpecialTokens(v, text, parseSpecial, fragments);

    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (addSpecial && v.addBos) out.push_back(v.bos);
    if (v.type == ModelType::Spm) {
        // The space prefix goes on the text at the start and after each special token.
        bool afterSpecial = true;
        for (const detail::Fragment& f : fragments) {
            if (f.token != kNoToken) {
                out.push_back(f.token);
                afterSpecial = true;
                continue;
            }
            const std::string escaped = detail::escapeSpmText(text.substr(f.offset, f.length),
                                                              v.addSpacePrefix && afterSpecial);
            detail::encodeSpm(v, escaped, out);
            afterSpecial = false;
        }
    } else if (v.type == ModelType::Wpm) {
        for (const detail::Fragment& f : fragments) {
            if (f.token != kNoToken) {
                out.push_back(f.token);
            } else {
                detail::encodeWpm(v, text.substr(f.offset, f.length), out);
            }
        }
        if (addSpecial && v.addSep) out.push_back(v.sep);
    } else {
        for (const detail::Fragment& f : fragments) {
            if (f.token != kNoToken) {
                out.push_back(f.token);
            } else {
                detail::encodeBpe(v, text.substr(f.offset, f.length), out);
            }
        }
    }
    if (addSpecial && v.addEos) out.push_back(v.eos);
    return out;
}

ModelType Tokenizer::modelType() const { return m_vocab->type; }
const std::string& Tokenizer::modelName() const { return m_vocab->modelName; }
const std::string& Tokenizer::preTokenizerName() const { return m_vocab->preName; }
int32_t Tokenizer::vocabSize() const { return m_vocab->size(); }

int32_t Tokenizer::bos() const { return m_vocab->bos; }
int32_t Tokenizer::eos() const { return m_vocab->eos; }
int32_t Tokenizer::eot() const { return m_vocab->eot; }
int32_t Tokenizer::eom() const { return m_vocab->eom; }
int32_t Tokenizer::unk() const { return m_vocab->unk; }
int32_t Tokenizer::pad() const { return m_vocab->pad; }
int32_t Tokenizer::sep() const { return m_vocab->sep; }

bool Tokenizer::addBos() const { return m_vocab->addBos; }
bool Tokenizer::addEos() const { return m_vocab->addEos; }
bool Tokenizer::addSpacePrefix() const { return m_vocab->addSpacePrefix; }
bool Tokenizer::addSep() const { return m_vocab->addSep; }

bool Tokenizer::isEog(int32_t id) const {
    return std::binary_search(m_vocab->eog.begin(), m_vocab->eog.end(), id);
}
const std::vector<int32_t>& Tokenizer::eogTokens() const { return m_vocab->eog; }

TokenType Tokenizer::tokenType(int32_t id) const {
    return m_vocab->valid(id) ? m_vocab->tokenType[id] : TokenType::Undefined;
}
std::string_view Tokenizer::tokenText(int32_t id) const {
    return m_vocab->valid(id) ? std::string_view(m_vocab->text[id]) : std::string_view();
}
float Tokenizer::tokenScore(int32_t id) const {
    return m_vocab->valid(id) ? m_vocab->score[id] : 0.0f;
}
int32_t Tokenizer::findToken(std::string_view text) const { return m_vocab->find(text); }

const std::vector<std::string>& Tokenizer::warnings() const { return m_vocab->warnings; }

} // namespace hearth::tokenizer
