// Tokenizers built from GGUF `tokenizer.ggml.*` metadata: SentencePiece-style BPE with byte
// fallback (`llama`), GPT-2 byte-level BPE (`gpt2`) with the pre-tokenizer the file names, and
// BERT's WordPiece (`bert`); encoding with special-token parsing, decoding, and a streaming
// decoder for generated text.
//
// A Tokenizer is immutable after loading and cheap to copy (copies share the vocabulary), so
// one instance may be used from many threads at once.
#pragma once

#include "hearth/status.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::gguf {
class File;
}

namespace hearth::tokenizer {

enum class ModelType {
    Spm, // tokenizer.ggml.model = "llama"
    Bpe, // tokenizer.ggml.model = "gpt2"
    Wpm, // tokenizer.ggml.model = "bert" (WordPiece: [CLS] is BOS, [SEP] the separator)
};

// Values of `tokenizer.ggml.token_type`. Values outside 1..6 load as Undefined.
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

inline constexpr int32_t kNoToken = -1;

struct DecodeOptions {
    // Drop a leading BOS / trailing EOS when the vocabulary adds them (add_bos / add_eos).
    bool removeSpecial = false;
    // Write the text of control and unknown tokens; otherwise they decode to nothing.
    bool renderSpecial = false;
    // With a space-prefixing vocabulary (SPM), the first token's leading space is dropped, as
    // llama.cpp does, except after a leading BOS. Turn this off when the tokens continue
    // earlier text (generated tokens after a prompt), so no space is lost.
    bool stripLeadingSpace = true;
    // Also drop it from the token after a leading BOS (what SentencePiece and Hugging Face do).
    bool stripSpaceAfterBos = false;
    // Apply the vocabulary's clean_up_tokenization_spaces rules (" ," -> ",", " 's" -> "'s"
    // ...) where the vocabulary asks for them. Turn off to get the exact concatenation of
    // token pieces. The streaming decoder never applies them.
    bool cleanSpaces = true;
};

namespace detail {
struct Vocab;
}

class Tokenizer {
public:
    // Reads the tokenizer metadata of a GGUF file (vocabulary-only files work). Errors name the
    // offending key: missing or mistyped arrays, arrays shorter than the token list, merges of
    // unknown tokens, duplicate tokens, unsupported tokenizer.ggml.model.
    static Result<Tokenizer> fromGguf(const gguf::File& file);

    // Token ids for `text`. addSpecial adds BOS/EOS where the vocabulary says to (WordPiece:
    // [CLS] first and [SEP] last).
    // parseSpecial turns occurrences of control-token text (e.g. "<|eot_id|>") into those
    // tokens; without it they are tokenized as plain text. User-defined tokens are always
    // matched. Invalid UTF-8 is tokenized, never rejected (BPE sees U+FFFD in its place;
    // WordPiece drops it).
    Result<std::vector<int32_t>> encode(std::string_view text, bool addSpecial,
                                        bool parseSpecial) const;

    // The bytes token `id` stands for: "▁" becomes a space (SPM), byte tokens become their
    // byte, byte-level characters become bytes (BPE). Control and unknown tokens give their
    // text when renderSpecial is set, else "". Out-of-range ids give "". Not necessarily
    // valid UTF-8 on its own.
    std::string tokenPiece(int32_t id, bool renderSpecial = true) const;

    // The text of a token sequence. Errors on ids outside the vocabulary. The result is the
    // concatenated bytes and may be invalid UTF-8 if the ids split a character.
    Result<std::string> decode(std::span<const int32_t> ids,
                               const DecodeOptions& options = {}) const;

    ModelType modelType() const;
    const std::string& modelName() const;       // tokenizer.ggml.model
    const std::string& preTokenizerName() const; // tokenizer.ggml.pre ("" when absent)
    int32_t vocabSize() const;

    // Special token ids, kNoToken when the vocabulary has none.
    int32_t bos() const;
    int32_t eos() const;
    int32_t eot() const;
    int32_t eom() const;
    int32_t unk() const;
    int32_t pad() const;
    int32_t sep() const;

    bool addBos() const;
    bool addEos() const;
    bool addSpacePrefix() const;
    // WordPiece: addSpecial ends the text with sep(). Other vocabularies only report the
    // file's add_sep_token here (encode does not add it).
    bool addSep() const;

    // End of generation: EOS, EOT, EOM and the end-of-turn tokens known by their text.
    bool isEog(int32_t id) const;
    const std::vector<int32_t>& eogTokens() const; // ascending

    TokenType tokenType(int32_t id) const;       // Undefined for out-of-range ids
    std::string_view tokenText(int32_t id) const; // the vocabulary string; "" if out of range
    float tokenScore(int32_t id) const;           // 0 for out-of-range ids
    int32_t findToken(std::string_view text) const; // exact vocabulary string, or kNoToken

    // Things worth telling the user that did not stop loading (unknown pre-tokenizer, special
    // ids out of range, ...), one line each.
    const std::vector<std::string>& warnings() const;

private:
    explicit Tokenizer(std::shared_ptr<const detail::Vocab> vocab);
    std::shared_ptr<const detail::Vocab> m_vocab;
};

// Turns generated tokens into text as they arrive. Text comes out only in whole UTF-8
// characters: bytes of a character split across tokens (byte-fallback tokens, byte-level
// pieces) wait until the character is complete, and bytes that can never form a valid
// character come out as U+FFFD. The concatenated output equals decode() of the same ids with
// cleanSpaces off, whenever that decode is valid UTF-8. For generated tokens that continue a
// prompt, set options.stripLeadingSpace = false.
class StreamDecoder {
public:
    explicit StreamDecoder(Tokenizer tokenizer, DecodeOptions options = {});

    // Adds one token; returns the text completed by it (possibly empty). Errors on ids outside
    // the vocabulary (the decoder state is unchanged then).
    Result<std::string> push(int32_t id);

    // Ends the stream: returns what is still buffered, an incomplete character as U+FFFD.
    // The decoder is then ready for a new stream.
    std::string finish();

    // Drops anything buffered and starts a new stream.
    void reset();

    // Bytes held back waiting for the rest of a character.
    size_t pendingBytes() const { return m_pending.size(); }

private:
    Tokenizer m_tokenizer;
    DecodeOptions m_options;
    std::string m_pending;
    size_t m_tokensSeen = 0;
    bool m_stripNextSpace = false;
};

} // namespace hearth::tokenizer
