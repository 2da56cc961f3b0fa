// A deterministic stand-in for hearth::Engine in server tests: it "generates" a scripted reply
// token by token on its own thread, honours max tokens, n, stop strings and cancel, and records
// what it was asked, so the HTTP layer can be tested without a model.
#pragma once

#include "hearth/engine.h"
#include "hearth/gguf.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace hearth::test {

class FakeEngine final : public Engine {
public:
    // `vocabGguf`: a GGUF whose tokenizer the fake uses (e.g. stories260K.gguf).
    static std::unique_ptr<FakeEngine> create(const std::string& vocabGguf, int32_t context = 512) {
        auto file = gguf::File::open(vocabGguf);
        if (!file) return nullptr;
        auto tok = tokenizer::Tokenizer::fromGguf(*file);
        if (!tok) return nullptr;
        return std::unique_ptr<FakeEngine>(new FakeEngine(std::move(*tok), context));
    }

    ~FakeEngine() override {
        {
            std::lock_guard<std::mutex> lock(m_mu);
            m_stop = true;
        }
        m_cv.notify_all();
        m_thread.join();
    }

    // What every choice generates (repeated when `repeat` is set, until max tokens).
    void setReply(std::string reply, bool repeat = false) {
        std::lock_guard<std::mutex> lock(m_mu);
        m_reply = std::move(reply);
        m_repeat = repeat;
    }
    void setTokenDelay(std::chrono::microseconds d) { m_delayUs = d.count(); }
    // Requests submitted from now on read their prompt over `steps` steps before their first
    // token, saying onPromptProgress after each but the last (as the engine does).
    void setPromptSteps(int steps) { m_promptSteps = steps; }
    // What renderChat appends for a generation prompt ("assistant:" by default).
    void setGenerationPrompt(std::string text) {
        std::lock_guard<std::mutex> lock(m_mu);
        m_generationPrompt = std::move(text);
    }
    void setMaxWaiting(int n) { m_maxWaiting = n; } // live requests beyond this: Busy
    void setFailNext(Status s) {
        std::lock_guard<std::mutex> lock(m_mu);
        m_failNext = std::move(s);
    }

    std::set<RequestId> cancelled() const {
        std::lock_guard<std::mutex> lock(m_mu);
        return m_cancelled;
    }
    GenerationRequest lastRequest() const {
        std::lock_guard<std::mutex> lock(m_mu);
        return m_last;
    }
    int submitted() const { return m_submitted; }
    int live() const {
        std::lock_guard<std::mutex> lock(m_mu);
        return int(m_live.size());
    }

    Result<RequestId> submit(GenerationRequest request) override {
        if (request.n < 1 || request.n > 128) return invalidArgument("n must be in 1..128");
        for (const std::string& s : request.stopStrings)
            if (s.empty()) return invalidArgument("empty stop string");
        if (int64_t(request.prompt.size()) + request.maxTokens > m_summary.contextLength)
            return outOfRange("prompt + max tokens exceed the context");
        std::lock_guard<std::mutex> lock(m_mu);
        if (int(m_live.size()) >= m_maxWaiting) return busy("queue full");
        const RequestId id = m_nextId++;
        Live l;
        l.id = id;
        l.sink = request.sink;
        l.promptTokens = int32_t(request.prompt.size());
        l.maxTokens = request.maxTokens;
        l.stops = request.stopStrings;
        l.topLogprobs = request.sampling.topLogprobs;
        l.choices.resize(size_t(request.n));
        l.script = m_tokenizer.encode(m_reply, false, false).value();
        l.repeat = m_repeat;
        l.promptSteps = m_promptSteps;
        l.failWith = m_failNext;
        m_failNext = Status::ok();
        request.sink.reset();
        m_last = std::move(request);
        m_live.push_back(std::move(l));
        ++m_submitted;
        m_cv.notify_all();
        return id;
    }

    // Embeddings: each input's vector (8 wide) is a fixed function of its ids, answered at once;
    // the checks are the real engine's. The last request is kept (lastEmbedding()).
    Result<RequestId> embed(EmbeddingRequest request) override {
        if (request.inputs.empty()) return invalidArgument("no input");
        if (request.dimensions < 0 || request.dimensions > m_summary.nEmbd) return invalidArgument("dimensions");
        EmbeddingResult result;
        for (const auto& in : request.inputs) {
            if (in.empty()) return invalidArgument("empty input");
            if (int64_t(in.size()) > m_summary.contextLength) return outOfRange("input beyond the context");
            std::vector<float> v(size_t(request.dimensions > 0 ? request.dimensions : m_summary.nEmbd));
            for (size_t j = 0; j < v.size(); ++j)
                for (int32_t t : in) v[j] += float((t * int32_t(j + 3)) % 17) - 8.0f;
            double n = 0;
            for (float x : v) n += double(x) * x;
            if (request.normalize && n > 0)
                for (float& x : v) x = float(x / std::sqrt(n));
            result.vectors.push_back(std::move(v));
            result.promptTokens += int32_t(in.size());
        }
        auto sink = std::move(request.sink);
        RequestId id = 0;
        {
            std::lock_guard<std::mutex> lock(m_mu);
            m_lastEmbedding = std::move(request);
            ++m_submitted;
            id = m_nextId++;
        }
        sink->onEmbeddings(std::move(result));
        return id;
    }
    EmbeddingRequest lastEmbedding() const {
        std::lock_guard<std::mutex> lock(m_mu);
        return m_lastEmbedding;
    }

    void cancel(RequestId id) override {
        // Recorded even while the step thread holds the live list (it is swapped out then);
        // the step applies it when the request is put back.
        std::lock_guard<std::mutex> lock(m_mu);
        if (id <= 0 || id >= m_nextId) return;
        m_cancelled.insert(id);
        for (Live& l : m_live)
            if (l.id == id) l.cancel = true;
    }

    const ModelSummary& model() const override { return m_summary; }
    EngineStats stats() const override {
        std::lock_guard<std::mutex> lock(m_mu);
        EngineStats s;
        s.running = int32_t(m_live.size());
        s.kvBlocksTotal = 64;
        s.kvBlocksUsed = int32_t(m_live.size());
        s.prefixQueryTokens = 100;
        s.prefixHitTokens = 25;
        return s;
    }
    const tokenizer::Tokenizer& tokenizer() const override { return m_tokenizer; }

    // "role: content\n" per message, then "assistant:" (setGenerationPrompt) when a generation
    // prompt is asked for.
    // A message whose content is "RAISE" fails like a template's raise_exception.
    Result<std::string> renderChat(const tmpl::ChatRequest& request) const override {
        std::string out;
        for (const tmpl::ChatMessage& message : request.messages) {
            std::string role = message.role, content = message.content.value_or("");
            if (!message.rawJson.empty()) { // a message the typed fields cannot express
                const nlohmann::ordered_json m = nlohmann::ordered_json::parse(message.rawJson);
                role = m["role"].get<std::string>();
                content = m["content"].is_string() ? m["content"].get<std::string>() : "";
            }
            if (content == "RAISE") return invalidArgument("Conversation roles must alternate");
            out += role + ": " + content + "\n";
        }
        if (!request.toolsJson.empty())
            out += "tools: " + std::to_string(nlohmann::ordered_json::parse(request.toolsJson).size()) + "\n";
        if (request.addGenerationPrompt) {
            std::lock_guard<std::mutex> lock(m_mu);
            out += m_generationPrompt;
        }
        return out;
    }
    Result<std::vector<int32_t>> encodeChat(const tmpl::ChatRequest& request) const override {
        HEARTH_ASSIGN_OR_RETURN(std::string text, renderChat(request));
        return m_tokenizer.encode(text, true, true);
    }

private:
    struct Choice {
        size_t pos = 0;
        int32_t produced = 0;
        std::string text;
        bool done = false;
        FinishReason why = FinishReason::Stop;
        std::string stop; // the stop string that ended it
    };
    struct Live {
        RequestId id = 0;
        std::shared_ptr<TokenSink> sink;
        int32_t promptTokens = 0, maxTokens = 0, topLogprobs = 0;
        std::vector<std::string> stops;
        std::vector<Choice> choices;
        std::vector<int32_t> script;
        bool repeat = false, cancel = false;
        Status failWith;
        int promptSteps = 1, promptStep = 0;
    };

    FakeEngine(tokenizer::Tokenizer tok, int32_t context) : m_tokenizer(std::move(tok)) {
        m_summary.architecture = "fake";
        m_summary.name = "fake";
        m_summary.nVocab = m_tokenizer.vocabSize();
        m_summary.contextLength = context;
        m_summary.nEmbd = 8;
        m_thread = std::thread([this] { run(); });
    }

    // One step: one token for every unfinished choice of every live request.
    void run() {
        for (;;) {
            std::vector<Live> work;
            {
                std::unique_lock<std::mutex> lock(m_mu);
                m_cv.wait(lock, [&] { return m_stop || !m_live.empty(); });
                if (m_stop) {
                    for (Live& l : m_live) l.sink->onFinish(FinishReason::Cancelled, {});
                    return;
                }
                work.swap(m_live);
            }
            std::vector<Live> keep;
            for (Live& l : work)
                if (!stepOne(l)) keep.push_back(std::move(l));
            {
                std::lock_guard<std::mutex> lock(m_mu);
                // Cancels that arrived while the lock was free apply next step.
                for (Live& l : keep) {
                    if (m_cancelled.count(l.id)) l.cancel = true;
                    m_live.push_back(std::move(l));
                }
            }
            if (m_delayUs > 0) std::this_thread::sleep_for(std::chrono::microseconds(m_delayUs.load()));
        }
    }

    // Returns true when the request ended.
    bool stepOne(Live& l) {
        Usage usage;
        usage.promptTokens = l.promptTokens;
        if (!l.failWith.isOk()) {
            l.sink->onError(l.failWith);
            return true;
        }
        if (l.cancel) {
            for (size_t c = 0; c < l.choices.size(); ++c)
                if (!l.choices[c].done) l.sink->onChoiceFinish(int32_t(c), FinishReason::Cancelled, {});
            for (const Choice& c : l.choices) usage.completionTokens += c.produced;
            l.sink->onFinish(FinishReason::Cancelled, usage);
            return true;
        }
        if (l.promptStep + 1 < l.promptSteps) { // a step reading the prompt
            ++l.promptStep;
            l.sink->onPromptProgress(l.promptTokens * l.promptStep / l.promptSteps, l.promptTokens);
            return false;
        }
        bool all = true;
        for (size_t c = 0; c < l.choices.size(); ++c) {
            Choice& ch = l.choices[c];
            if (ch.done) continue;
            FinishReason why = FinishReason::Stop;
            if (ch.produced >= l.maxTokens) {
                ch.done = true;
                why = FinishReason::Length;
            } else if (ch.pos >= l.script.size() && !(l.repeat && !l.script.empty())) {
                ch.done = true;
            } else {
                if (ch.pos >= l.script.size()) ch.pos = 0;
                const int32_t id = l.script[ch.pos++];
                ++ch.produced;
                TokenInfo t;
                t.choice = int32_t(c);
                t.id = id;
                t.text = m_tokenizer.tokenPiece(id);
                if (ch.produced == 1 && !t.text.empty() && t.text[0] == ' ')
                    t.text.erase(0, 1); // replies start without the SPM space
                t.logprob = -0.25f;
                for (int32_t k = 0; k < l.topLogprobs; ++k) t.topLogprobs.emplace_back(k + 3, -1.0f - k);
                const std::string before = ch.text;
                ch.text += t.text;
                size_t first = std::string::npos;
                for (const std::string& s : l.stops)
                    if (const size_t at = ch.text.find(s); at < first) {
                        first = at;
                        ch.stop = s;
                    }
                if (first != std::string::npos) {
                    t.text = first > before.size() ? ch.text.substr(before.size(), first - before.size()) : "";
                    ch.done = true;
                }
                l.sink->onToken(t);
            }
            if (ch.done) {
                ch.why = why;
                l.sink->onChoiceFinish(int32_t(c), why, ch.stop);
            }
            all = all && ch.done;
        }
        if (!all) return false;
        for (const Choice& c : l.choices) usage.completionTokens += c.produced;
        usage.timeToFirstTokenMs = 1.0;
        usage.generationMs = 2.0;
        l.sink->onFinish(l.choices[0].why, usage);
        return true;
    }

    tokenizer::Tokenizer m_tokenizer;
    ModelSummary m_summary;
    mutable std::mutex m_mu;
    std::condition_variable m_cv;
    std::vector<Live> m_live;
    std::set<RequestId> m_cancelled;
    GenerationRequest m_last;
    EmbeddingRequest m_lastEmbedding;
    std::string m_reply = "Hello there, friend.";
    std::string m_generationPrompt = "assistant:";
    bool m_repeat = false;
    Status m_failNext;
    RequestId m_nextId = 1;
    std::atomic<int> m_submitted{0};
    std::atomic<int> m_maxWaiting{1 << 20};
    std::atomic<int64_t> m_delayUs{0};
    std::atomic<int> m_promptSteps{1};
    std::thread m_thread;
    bool m_stop = false;
};

} // namespace hearth::test
