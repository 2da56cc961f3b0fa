// Grammar-constrained generation through the engine on stories260K (SentencePiece with byte
// fallback): a permissive grammar changes nothing, a restrictive one is always obeyed (greedy,
// sampled, n > 1 forks, with stop strings, with the prefix cache), a finished sentence ends the
// choice at once, and a grammar no token can continue ends it with Error.
#include "hearth/engine.h"
#include "hearth/grammar.h"
#include "engine_device_checks.h"
#include "test_support.h"
#include "token_collector.h"

#include <QtTest>

using namespace hearth;
using test::TokenCollector;

namespace {

const std::vector<int32_t>& kPrompt = test::kStoriesPrompt;

std::shared_ptr<const grammar::Grammar> gbnf(const std::string& text) {
    auto g = grammar::parseGbnf(text);
    if (!g) qFatal("%s", g.status().message().c_str());
    return *g;
}

GenerationRequest request(std::shared_ptr<TokenCollector> sink, std::shared_ptr<const grammar::Grammar> g,
                          int maxTokens, float temperature = 0.0f, uint64_t seed = 0) {
    GenerationRequest r = test::greedyRequest(kPrompt, std::move(sink), maxTokens);
    r.grammar = std::move(g);
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    return r;
}

} // namespace

class TestEngineGrammar : public QObject {
    Q_OBJECT
    std::unique_ptr<Engine> m_engine;

private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        EngineConfig c;
        c.modelPath = test::testDataPath("models/stories260K.gguf");
        c.contextLength = 512;
        c.kvMemoryBytes = 8ull << 20;
        auto e = Engine::create(c);
        QVERIFY2(e.isOk(), e.status().toString().c_str());
        m_engine = std::move(*e);
    }

    // A grammar that allows every text leaves greedy decoding as it was; one that forbids a
    // letter changes it, and the letter never appears.
    void permissiveAndRestrictive() {
        auto any = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(request(any, gbnf("root ::= [^\\x00]*"), 64)).isOk());
        QVERIFY(any->waitDone());
        QCOMPARE(any->tokens(), test::kStoriesGreedy);
        auto noE = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(request(noE, gbnf("root ::= [^eE\\x00]*"), 64)).isOk());
        QVERIFY(noE->waitDone());
        QVERIFY(noE->error.isOk());
        QVERIFY(noE->text().find('e') == std::string::npos);
        QVERIFY(noE->text().find('E') == std::string::npos);
        QVERIFY(noE->tokens() != test::kStoriesGreedy);
        QCOMPARE(noE->tokens().size(), size_t(64));
    }

    // Once the text is a sentence nothing may extend, the choice ends (Stop) without another step.
    void aFinishedSentenceEndsTheChoice() {
        auto sink = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(request(sink, gbnf("root ::= \" Lily\" | \" Tom\" | \" Ben\""), 50)).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Stop);
        const std::string t = sink->text();
        QVERIFY2(t == " Lily" || t == " Tom" || t == " Ben", t.c_str());
        QVERIFY(sink->usage.completionTokens <= 4);
    }

    // Sampled choices (n = 4, forked from the first token) all obey the grammar.
    void sampledForksObey() {
        auto g = gbnf("root ::= (\"yes\" | \"no\" | \"maybe so\") \".\"");
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            auto sink = std::make_shared<TokenCollector>();
            GenerationRequest r = request(sink, g, 30, 1.0f, seed);
            r.n = 4;
            QVERIFY(m_engine->submit(std::move(r)).isOk());
            QVERIFY(sink->waitDone());
            QCOMPARE(sink->choiceText.size(), size_t(4));
            for (const std::string& t : sink->choiceText)
                QVERIFY2(t == "yes." || t == "no." || t == "maybe so.", t.c_str());
        }
    }

    // Stop strings still cut the text; the prefix cache serves a repeated prompt; same output.
    void stopStringsAndPrefixCache() {
        auto g = gbnf("root ::= [a-z ]+ \".\"");
        // A prompt of two whole blocks and more, so the second request finds them cached.
        std::vector<int32_t> prompt = kPrompt;
        prompt.insert(prompt.end(), test::kStoriesGreedy.begin(), test::kStoriesGreedy.begin() + 40);
        auto first = std::make_shared<TokenCollector>();
        GenerationRequest r = request(first, g, 60);
        r.prompt = prompt;
        r.stopStrings = {" was"};
        QVERIFY(m_engine->submit(std::move(r)).isOk());
        QVERIFY(first->waitDone());
        QVERIFY(first->text().find(" was") == std::string::npos);
        auto second = std::make_shared<TokenCollector>();
        GenerationRequest again = request(second, g, 60);
        again.prompt = prompt;
        again.stopStrings = {" was"};
        QVERIFY(m_engine->submit(std::move(again)).isOk());
        QVERIFY(second->waitDone());
        QCOMPARE(second->text(), first->text());
        QVERIFY(second->usage.cachedPromptTokens > 0);
        for (char c : first->text()) QVERIFY((c >= 'a' && c <= 'z') || c == ' ' || c == '.');
    }

    // Surrogates are no characters: no token can start this grammar, so the choice ends with
    // Error and nothing output; the engine goes on serving.
    void aDeadEndEndsWithError() {
        auto sink = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(request(sink, gbnf("root ::= [\\uD800-\\uDFFF]+"), 20)).isOk());
        QVERIFY(sink->waitDone());
        QCOMPARE(sink->reason, FinishReason::Error);
        QCOMPARE(sink->text(), std::string());
        auto after = std::make_shared<TokenCollector>();
        QVERIFY(m_engine->submit(test::greedyRequest(kPrompt, after, 8)).isOk());
        QVERIFY(after->waitDone());
        QCOMPARE(after->tokens().size(), size_t(8));
        QTRY_COMPARE(m_engine->stats().kvBlocksUsed, 0);
    }
};

QTEST_GUILESS_MAIN(TestEngineGrammar)
#include "test_engine_grammar.moc"
