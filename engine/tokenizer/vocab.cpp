// Reading `tokenizer.ggml.*` metadata and turning it into an indexed, validated vocabulary:
// token lookup, BPE merge table, special ids with their defaults, end-of-generation set,
// special-token match order and the token piece cache.
#include "tokenizer/vocab.h"

#include "hearth/gguf.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/special_split.h"
#include "tokenizer/unicode.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace hearth::tokenizer::detail {

namespace {

constexpr std::string_view kKeyModel = "tokenizer.ggml.model";
constexpr std::string_view kKeyPre = "tokenizer.ggml.pre";
constexpr std::string_view kKeyTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kKeyScores = "tokenizer.ggml.scores";
constexpr std::string_view kKeyTypes = "tokenizer.ggml.token_type";
constexpr std::string_view kKeyMerges = "tokenizer.ggml.merges";

// A short, printable rendering of token text for messages.
std::string inQuotes(std::string_view s) {
    std::string out = "'";
    const size_t limit = 48;
    for (size_t i = 0; i < s.size() && i < limit; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    if (s.size() > limit) out += "...";
    out += "'";
    return out;
}

std::string typeName(const gguf::Value& v) {
    std::string name(gguf::valueTypeName(v.type()));
    if (v.isArray()) name += " of " + std::string(gguf::valueTypeName(v.elementType()));
    return name;
}

Status mistyped(std::string_view key, const gguf::Value& v, std::string_view expected) {
    return invalidFormat(std::string(key) + " has type " + typeName(v) + ", expected " +
                         std::string(expected));
}

Result<std::optional<int64_t>> readInt(const gguf::File& file, std::string_view key) {
    const gguf::Value* v = file.find(key);
    if (!v) return std::optional<int64_t>{};
    const std::optional<int64_t> i = v->asInt();
    if (!i) return mistyped(key, *v, "an integer");
    return std::optional<int64_t>{*i};
}

Result<std::optional<bool>> readBool(const gguf::File& file, std::string_view key) {
    const gguf::Value* v = file.find(key);
    if (!v) return std::optional<bool>{};
    const std::optional<bool> b = v->asBool();
    if (!b) return mistyped(key, *v, "bool");
    return std::optional<bool>{*b};
}

// Tokens llama.cpp recognises by their text when the file does not name them. Where several
// are present the first listed wins.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
    "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
};
constexpr std::string_view kFimSufTexts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
    "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
};
constexpr std::string_view kFimMidTexts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
    "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>",
};
constexpr std::string_view kFimPadTexts[] = {
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
};
constexpr std::string_view kFimRepTexts[] = {
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};

// Texts of tokens that end generation.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
};

// Harmony-format markers that must always be rendered (they carry message structure).
constexpr std::string_view kAlwaysRenderedTexts[] = {
    "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>",
};

bool isSpecialType(TokenType t) {
    return t == TokenType::Control || t == TokenType::Unknown || t == TokenType::UserDefined;
}

// Parses "<0xHH>"; -1 if the text is not of that form.
int parseByteToken(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
    int value = 0;
    for (char c : text.substr(3, 2)) {
        int digit;
        if (c >= '0' && c <= '9') digit = c - '0';
        else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
        else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        else return -1;
        value = value * 16 + digit;
    }
    return value;
}

// The bytes a byte-level BPE token spells. A character outside the byte alphabet is written
// as "[UNK_BYTE_0x<hex of its UTF-8>" followed by the token text and "]", as llama.cpp does.
std::string byteLevelPiece(std::string_view text) {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        const uint32_t cp = decodeUtf8At(text, pos);
        const int byte = codepointToByte(cp);
        if (byte >= 0) {
            out.push_back(static_cast<char>(byte));
            continue;
        }
        out += "[UNK_BYTE_0x";
        for (size_t i = start; i < pos; ++i) {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(text[i]));
            out += buf;
        }
        out.append(text);
        out += "]";
    }
    return out;
}

std::string spmPiece(std::string_view text) {
    static constexpr std::string_view kSpace = "\xE2\x96\x81"; // U+2581
    std::string out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        if (text.substr(pos, kSpace.size()) == kSpace) {
            out.push_back(' ');
            pos += kSpace.size();
        } else {
            out.push_back(text[pos++]);
        }
    }
    return out;
}

// Token texts spell spaces as U+2581 (SentencePiece, WordPiece word starts, and Gemma 4's BPE)
// rather than in the GPT-2 byte alphabet.
bool spmSpelled(const Vocab& v) {
    return v.type == ModelType::Spm || v.type == ModelType::Wpm || v.pre.escapeSpaces;
}

std::string computePiece(const Vocab& v, int32_t id) {
    const std::string& text = v.text[id];
    switch (v.tokenType[id]) {
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::UserDefined: return text;
    case TokenType::Normal: return spmSpelled(v) ? spmPiece(text) : byteLevelPiece(text);
    case TokenType::Byte: {
        const int byte = parseByteToken(text);
        if (byte >= 0) return std::string(1, static_cast<char>(byte));
        return spmSpelled(v) ? spmPiece(text) : byteLevelPiece(text);
    }
    case TokenType::Undefined:
    case TokenType::Unused: return {};
    }
    return {};
}

Status loadMerges(Vocab& v, std::span<const std::string> merges) {
    v.merges.reserve(merges.size());
    std::string joined;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string& m = merges[rank];
        const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
        if (space == std::string::npos) {
            return invalidFormat(std::string(kKeyMerges) + "[" + std::to_string(rank) + "] " +
                                 inQuotes(m) + " is not two tokens separated by a space");
        }
        const std::string_view left = std::string_view(m).substr(0, space);
        const std::string_view right = std::string_view(m).substr(space + 1);
        const int32_t l = v.find(left);
        const int32_t r = v.find(right);
        if (l == kNoToken || r == kNoToken) {
            return invalidFormat(std::string(kKeyMerges) + "[" + std::to_string(rank) +
                                 "] names a token that is not in the vocabulary: " +
                                 inQuotes(l == kNoToken ? left : right));
        }
        joined.assign(left).append(right);
        const MergeEntry entry{static_cast<int32_t>(rank), v.find(joined)};
        v.merges.insert(Vocab::mergeKey(l, r), entry);
    }
    return Status::ok();
}

// Records every adjacent symbol pair inside every token, symbols cut as the SPM tokenizer cuts
// text (by UTF-8 lead byte).
void indexSpmPairs(Vocab& v) {
    v.spmPairs.reserve(v.text.size() * 4);
    for (const std::string& t : v.text) {
        std::string_view prev;
        size_t pos = 0;
        while (pos < t.size()) {
            const size_t len =
                std::min(utf8LengthFromLead(static_cast<uint8_t>(t[pos])), t.size() - pos);
            const std::string_view sym = std::string_view(t).substr(pos, len);
            if (!prev.empty()) v.spmPairs.insert(spmPairKey(prev, sym), 1);
            prev = sym;
            pos += len;
        }
    }
}

// Applies a stored special id over its default, the way llama.cpp does: a default outside
// the vocabulary is dropped; a stored id outside it is ignored with a warning (0xFFFFFFFF and
// -1, the usual "none" markers, quietly).
void applySpecialId(Vocab& v, std::string_view name, int32_t& id, std::optional<int64_t> stored) {
    if (id != kNoToken && !v.valid(id)) id = kNoToken;
    if (!stored) return;
    if (*stored >= 0 && *stored < v.size()) {
        id = static_cast<int32_t>(*stored);
        return;
    }
    if (*stored != -1 && *stored != 0xFFFFFFFFll) {
        v.warnings.push_back("tokenizer.ggml." + std::string(name) + " = " +
                             std::to_string(*stored) + " is outside the vocabulary (" +
                             std::to_string(v.size()) + " tokens); ignored");
    }
}

// Marks a token found by its text as control, as llama.cpp does for end-of-turn tokens that
// the file typed as normal.
void forceControl(Vocab& v, int32_t id) {
    if (v.tokenType[id] != TokenType::Control) {
        v.warnings.push_back("token " + std::to_string(id) + " " + inQuotes(v.text[id]) +
                             " looks like a control token but is not typed as one; treating it "
                             "as control");
        v.tokenType[id] = TokenType::Control;
    }
}

template <size_t N>
void detectByText(Vocab& v, int32_t& id, const std::string_view (&texts)[N]) {
    if (id != kNoToken) return;
    for (std::string_view t : texts) {
        if (const int32_t found = v.find(t); found != kNoToken) {
            id = found;
            forceControl(v, found);
            return;
        }
    }
}

void findEndOfGeneration(Vocab& v) {
    detectByText(v, v.eot, kEotTexts);
    detectByText(v, v.eom, kEomTexts);
    detectByText(v, v.fimPre, kFimPreTexts);
    detectByText(v, v.fimSuf, kFimSufTexts);
    detectByText(v, v.fimMid, kFimMidTexts);
    detectByText(v, v.fimPad, kFimPadTexts);
    detectByText(v, v.fimRep, kFimRepTexts);
    detectByText(v, v.fimSep, kFimSepTexts);
    for (std::string_view t : kAlwaysRenderedTexts) {
        if (const int32_t id = v.find(t); id != kNoToken) v.tokenType[id] = TokenType::UserDefined;
    }
    std::vector<int32_t> eog;
    for (std::string_view t : kEogTexts) {
        if (const int32_t id = v.find(t); id != kNoToken) {
            eog.push_back(id);
            forceControl(v, id);
        }
    }
    for (int32_t id : {v.eos, v.eot, v.eom, v.fimPad, v.fimRep, v.fimSep}) {
        if (id != kNoToken) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    const auto has = [&](std::string_view t) {
        const int32_t id = v.find(t);
        return id != kNoToken && std::binary_search(eog.begin(), eog.end(), id);
    };
    // Harmony (gpt-oss) and similar formats: "<|end|>" closes a message, not the generation.
    if ((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))) {
        if (has("<|end|>")) {
            const int32_t end = v.find("<|end|>");
            eog.erase(std::find(eog.begin(), eog.end(), end));
            v.tokenType[end] = TokenType::UserDefined;
        }
    }
    // Gemma 4 style: "</s>" is not an end of generation when "<|tool_response>" is.
    if (has("<|tool_response>") && has("</s>")) {
        const int32_t s = v.find("</s>");
        eog.erase(std::find(eog.begin(), eog.end(), s));
        v.tokenType[s] = TokenType::Normal;
    }
    v.eog = std::move(eog);
}

// WordPiece: llama.cpp adds [CLS] (BOS) and [SEP] whenever special tokens are asked for,
// whatever add_bos_token / add_sep_token say, and never EOS; the flags are set to match, with
// a warning where the file said otherwise. Every word the vocabulary cannot spell becomes the
// unknown token, so there must be one.
Status settleWpmSpecials(Vocab& v) {
    if (v.unk == kNoToken) {
        return invalidFormat("the WordPiece vocabulary has no unknown token: "
                             "tokenizer.ggml.unknown_token_id is missing or outside the "
                             "vocabulary and the default id 100 ([UNK] in BERT) is too");
    }
    if (!v.addBos) {
        v.warnings.push_back("tokenizer.ggml.add_bos_token = false overridden: WordPiece always "
                             "starts with BOS ([CLS]) when adding special tokens");
        v.addBos = true;
    }
    if (!v.addSep) {
        v.warnings.push_back("tokenizer.ggml.add_sep_token = false overridden: WordPiece always "
                             "ends with the separator ([SEP]) when adding special tokens");
        v.addSep = true;
    }
    if (v.addEos) {
        v.warnings.push_back("tokenizer.ggml.add_eos_token = true ignored: WordPiece ends with "
                             "the separator, not EOS");
        v.addEos = false;
    }
    return Status::ok();
}

} // namespace

Result<VocabSource> readVocabSource(const gguf::File& file) {
    VocabSource src;
    const gguf::Value* model = file.find(kKeyModel);
    if (!model) return notFound(std::string(kKeyModel) + " is missing: the file has no tokenizer");
    if (!model->asString()) return mistyped(kKeyModel, *model, "string");
    src.model = *model->asString();

    if (const gguf::Value* pre = file.find(kKeyPre)) {
        if (!pre->asString()) return mistyped(kKeyPre, *pre, "string");
        src.pre = *pre->asString();
    }

    const gguf::Value* tokens = file.find(kKeyTokens);
    if (!tokens) return notFound(std::string(kKeyTokens) + " is missing");
    if (!tokens->asStringArray()) return mistyped(kKeyTokens, *tokens, "array of string");
    src.tokens = *tokens->asStringArray();

    if (const gguf::Value* scores = file.find(kKeyScores)) {
        std::optional<std::vector<float>> f = scores->asF32Array();
        if (!f && scores->isArray() && scores->elementType() == gguf::ValueType::I32) {
            if (auto i = scores->asI32Array()) f = std::vector<float>(i->begin(), i->end());
        }
        if (!f) return mistyped(kKeyScores, *scores, "array of f32 or i32");
        src.scores = std::move(*f);
    }
    if (const gguf::Value* types = file.find(kKeyTypes)) {
        auto t = types->asI32Array();
        if (!t) return mistyped(kKeyTypes, *types, "array of i32");
        src.tokenTypes = std::move(*t);
    }
    if (const gguf::Value* merges = file.find(kKeyMerges)) {
        if (!merges->asStringArray()) return mistyped(kKeyMerges, *merges, "array of string");
        src.merges = std::span<const std::string>(*merges->asStringArray());
    }

    struct IdKey {
        std::string_view key;
        std::optional<int64_t>* target;
    };
    const IdKey ids[] = {
        {"tokenizer.ggml.bos_token_id", &src.bos},
        {"tokenizer.ggml.eos_token_id", &src.eos},
        {"tokenizer.ggml.eot_token_id", &src.eot},
        {"tokenizer.ggml.eom_token_id", &src.eom},
        {"tokenizer.ggml.unknown_token_id", &src.unk},
        {"tokenizer.ggml.seperator_token_id", &src.sep}, // llama.cpp's spelling
        {"tokenizer.ggml.separator_token_id", &src.sep},
        {"tokenizer.ggml.padding_token_id", &src.pad},
        {"tokenizer.ggml.fim_pre_token_id", &src.fimPre},
        {"tokenizer.ggml.fim_suf_token_id", &src.fimSuf},
        {"tokenizer.ggml.fim_mid_token_id", &src.fimMid},
        {"tokenizer.ggml.fim_pad_token_id", &src.fimPad},
        {"tokenizer.ggml.fim_rep_token_id", &src.fimRep},
        {"tokenizer.ggml.fim_sep_token_id", &src.fimSep},
        {"tokenizer.ggml.prefix_token_id", &src.fimPre}, // older names
        {"tokenizer.ggml.suffix_token_id", &src.fimSuf},
        {"tokenizer.ggml.middle_token_id", &src.fimMid},
    };
    for (const IdKey& k : ids) {
        HEARTH_ASSIGN_OR_RETURN(std::optional<int64_t> value, readInt(file, k.key));
        if (value && !*k.target) *k.target = value;
    }
    HEARTH_ASSIGN_OR_RETURN(src.addBos, readBool(file, "tokenizer.ggml.add_bos_token"));
    HEARTH_ASSIGN_OR_RETURN(src.addEos, readBool(file, "tokenizer.ggml.add_eos_token"));
    HEARTH_ASSIGN_OR_RETURN(src.addSpacePrefix, readBool(file, "tokenizer.ggml.add_space_prefix"));
    HEARTH_ASSIGN_OR_RETURN(src.addSep, readBool(file, "tokenizer.ggml.add_sep_token"));
    HEARTH_ASSIGN_OR_RETURN(src.normalizerLowercase,
                            readBool(file, "tokenizer.ggml.normalizer.lowercase"));
    HEARTH_ASSIGN_OR_RETURN(src.normalizerStripAccents,
                            readBool(file, "tokenizer.ggml.normalizer.strip_accents"));
    return src;
}

Result<std::shared_ptr<const Vocab>> buildVocab(VocabSource src) {
    auto v = std::make_shared<Vocab>();
    v->modelName = src.model;
    if (src.model == "llama") {
        v->type = ModelType::Spm;
    } else if (src.model == "gpt2") {
        v->type = ModelType::Bpe;
    } else if (src.model == "bert") {
        v->type = ModelType::Wpm;
    } else if (src.model == "gemma4") {
        // BPE over SentencePiece-style text; the model name fixes the pre-tokenizer.
        v->type = ModelType::Bpe;
        src.pre = "gemma4";
    } else {
        return unsupported(std::string(kKeyModel) + " " + inQuotes(src.model) +
                           " is not supported (supported: 'llama' SentencePiece, 'gpt2' and "
                           "'gemma4' BPE, 'bert' WordPiece)");
    }

    const size_t n = src.tokens.size();
    if (n == 0) return invalidFormat(std::string(kKeyTokens) + " is empty");
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        return invalidFormat(std::string(kKeyTokens) + " has too many tokens");
    }
    if (src.scores && src.scores->size() < n) {
        return invalidFormat(std::string(kKeyScores) + " has " +
                             std::to_string(src.scores->size()) +
                             " entries for " + std::to_string(n) + " tokens");
    }
    if (src.tokenTypes && src.tokenTypes->size() < n) {
        return invalidFormat(std::string(kKeyTypes) + " has " +
                             std::to_string(src.tokenTypes->size()) + " entries for " +
                             std::to_string(n) + " tokens");
    }
    if (src.scores && src.scores->size() > n) {
        v->warnings.push_back(std::string(kKeyScores) +
                              " has more entries than tokens; extra ignored");
    }
    if (src.tokenTypes && src.tokenTypes->size() > n) {
        v->warnings.push_back(std::string(kKeyTypes) +
                              " has more entries than tokens; extra ignored");
    }

    // Token texts, then the lookup map (which points into them, so they must not move after).
    v->text = std::move(src.tokens);
    v->score.assign(n, 0.0f);
    v->tokenType.assign(n, TokenType::Normal);
    for (size_t i = 0; i < n; ++i) {
        std::string& t = v->text[i];
        if (t.size() > kMaxTokenBytes) {
            return invalidFormat(std::string(kKeyTokens) + "[" + std::to_string(i) + "] is " +
                                 std::to_string(t.size()) + " bytes long (limit " +
                                 std::to_string(kMaxTokenBytes) + ")");
        }
        if (t.empty()) {
            v->warnings.push_back("token " + std::to_string(i) + " is empty; named [EMPTY_" +
                                  std::to_string(i) + "]");
            t = "[EMPTY_" + std::to_string(i) + "]";
        }
        v->maxTokenBytes = std::max(v->maxTokenBytes, t.size());
        if (src.scores) v->score[i] = (*src.scores)[i];
        if (src.tokenTypes) {
            const int32_t type = (*src.tokenTypes)[i];
            v->tokenType[i] = (type >= 1 && type <= 6) ? static_cast<TokenType>(type)
                                                       : TokenType::Undefined;
        }
    }
    int32_t firstId = kNoToken;
    if (const int32_t dup = v->ids.build(v->text, firstId); dup != kNoToken) {
        return invalidFormat(std::string(kKeyTokens) + " lists " + inQuotes(v->text[dup]) +
                             " twice (ids " + std::to_string(firstId) + " and " +
                             std::to_string(dup) + ")");
    }

    // Tokenizer family defaults, then the file's settings.
    int32_t bos = kNoToken, eos = kNoToken, unk = kNoToken;
    if (v->type == ModelType::Spm) {
        bos = 1;
        eos = 2;
        unk = 0;
        v->addBos = true;
        v->addSpacePrefix = true;
        v->pre = PreTokenizerConfig{};
        v->pre.cleanSpaces = false;
        v->preName = src.pre.value_or("");
    } else if (v->type == ModelType::Wpm) {
        // BERT's ids; [CLS] serves as BOS and [SEP] closes the text. The pre-tokenizer name
        // (e.g. "bert-bge") does not change how WordPiece splits.
        bos = 101;
        unk = 100;
        v->sep = 102;
        v->pad = 0;
        v->addBos = true;
        v->addSep = true;
        v->pre = PreTokenizerConfig{};
        v->preName = src.pre.value_or("");
    } else {
        if (v->modelName != "gemma4") { // Gemma 4 takes its special ids from the file only
            bos = 11;
            eos = 11;
        }
        if (!src.merges) return notFound(std::string(kKeyMerges) + " is missing (needed for BPE)");
        v->preName = src.pre.value_or("");
        v->pre = preTokenizerConfig(v->preName);
        if (!src.pre || v->preName.empty()) {
            v->warnings.push_back("tokenizer.ggml.pre is missing; using the 'default' "
                                  "pre-tokenizer (tokenization may not match the model)");
        } else if (!v->pre.known) {
            v->warnings.push_back("unknown pre-tokenizer " + inQuotes(v->preName) +
                                  "; using 'default' (tokenization may not match the model)");
        }
        v->addBos = v->pre.forceAddBos;
    }
    v->bos = bos;
    v->eos = eos;
    v->unk = unk;
    applySpecialId(*v, "bos_token_id", v->bos, src.bos);
    applySpecialId(*v, "eos_token_id", v->eos, src.eos);
    applySpecialId(*v, "eot_token_id", v->eot, src.eot);
    applySpecialId(*v, "eom_token_id", v->eom, src.eom);
    applySpecialId(*v, "unknown_token_id", v->unk, src.unk);
    applySpecialId(*v, "seperator_token_id", v->sep, src.sep);
    applySpecialId(*v, "padding_token_id", v->pad, src.pad);
    applySpecialId(*v, "fim_pre_token_id", v->fimPre, src.fimPre);
    applySpecialId(*v, "fim_suf_token_id", v->fimSuf, src.fimSuf);
    applySpecialId(*v, "fim_mid_token_id", v->fimMid, src.fimMid);
    applySpecialId(*v, "fim_pad_token_id", v->fimPad, src.fimPad);
    applySpecialId(*v, "fim_rep_token_id", v->fimRep, src.fimRep);
    applySpecialId(*v, "fim_sep_token_id", v->fimSep, src.fimSep);
    if (src.addBos) v->addBos = *src.addBos;
    if (v->pre.alwaysAddBos && !v->addBos) {
        if (src.addBos) {
            v->warnings.push_back("tokenizer.ggml.add_bos_token = false overridden: the '" +
                                  v->preName + "' tokenizer always adds BOS");
        }
        v->addBos = true;
    }
    if (src.addEos) v->addEos = *src.addEos;
    if (src.addSpacePrefix) v->addSpacePrefix = *src.addSpacePrefix;
    if (src.addSep) v->addSep = *src.addSep;
    v->wpmLowercase = src.normalizerLowercase.value_or(true);
    v->wpmStripAccents = src.normalizerStripAccents.value_or(v->wpmLowercase);
    if (v->type == ModelType::Wpm) HEARTH_RETURN_IF_ERROR(settleWpmSpecials(*v));

    if (v->type == ModelType::Bpe) HEARTH_RETURN_IF_ERROR(loadMerges(*v, *src.merges));
    if (v->type == ModelType::Spm) indexSpmPairs(*v);

    for (int b = 0; b < 256; ++b) {
        if (v->type == ModelType::Bpe && v->pre.byteLevel) {
            v->byteToken[b] = v->find(byteToUtf8(static_cast<uint8_t>(b)));
        } else if (v->type == ModelType::Bpe) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", b);
            v->byteToken[b] = v->find(hex);
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", b);
            int32_t id = v->find(hex);
            if (id == kNoToken) id = v->find(std::string(1, static_cast<char>(b)));
            v->byteToken[b] = id;
        }
    }

    findEndOfGeneration(*v);

    for (int32_t id = 0; id < v->size(); ++id) {
        if (isSpecialType(v->tokenType[id])) v->specialTokens.push_back(id);
    }
    std::stable_sort(v->specialTokens.begin(), v->specialTokens.end(),
                     [&](int32_t a, int32_t b) { return v->text[a].size() > v->text[b].size(); });
    buildSpecialTrie(*v);

    v->piece.resize(n);
    for (int32_t id = 0; id < v->size(); ++id) v->piece[id] = computePiece(*v, id);

    if (v->addBos && v->bos == kNoToken) {
        v->warnings.push_back("the vocabulary asks for a BOS token but has none; not adding it");
        v->addBos = false;
    }
    if (v->addEos && v->eos == kNoToken) {
        v->warnings.push_back("the vocabulary asks for an EOS token but has none; not adding it");
        v->addEos = false;
    }
    if (v->addSep && v->sep == kNoToken) {
        v->warnings.push_back("the vocabulary asks for a separator token but has none; not "
                              "adding it");
        v->addSep = false;
    }
    return std::shared_ptr<const Vocab>(std::move(v));
}

} // namespace hearth::tokenizer::detail
