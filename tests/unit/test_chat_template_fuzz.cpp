// Mutation fuzz test of the chat-template engine: 5000 damaged variants of the shared templates
// (truncated, bytes deleted, Jinja fragments and random bytes inserted, chunks duplicated) are
// parsed and rendered with the shared conversations. Each must end in a result or an error,
// never a crash or a hang; the whole run is time-bounded.
#include "hearth/chat_template.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <sstream>

using namespace hearth;
using nlohmann::ordered_json;

namespace {

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const char* const kFragments[] = {
    "{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "{% endif %}", "{% endfor %}", "{% else %}",
    "{% for x in messages %}", "{% if loop.first %}", "{% set ns.x = 1 %}", "{% raw %}", "{% endraw %}",
    "{% macro m(a) %}{{ m(a) }}{% endmacro %}{{ m(1) }}", "{% for i in range(99999) %}", "{% break %}",
    "{% continue %}", "(", ")", "[", "]", "{", "}", "|", "|tojson(indent=4)", "|join(', ')", ".strip()",
    "[::-1]", "[1:]", " if ", " else ", " is defined", " is not none", " in ", " not ", " and ", " or ",
    "~", "+", "*", "**", "//", "%", "'", "\"", "\\", "\n", " ", "loop.index0", "messages[-1]", "none",
    "raise_exception('x')", "namespace(a=1)", "10**9", "'x' * 999999", "{% generation %}", "{% call m() %}",
    "{% filter upper %}", "{% with a = 1 %}", "{% print 1 %}", "\xff", "\xc3", "\xe2\x80\xa8", "\0",
};

std::string mutate(std::string s, std::mt19937& rng) {
    auto pick = [&](size_t n) { return n == 0 ? size_t(0) : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    const int mutations = 1 + static_cast<int>(pick(4));
    for (int m = 0; m < mutations; ++m) {
        const size_t pos = pick(s.size() + 1);
        switch (pick(6)) {
        case 0: s.resize(pos); break; // truncate
        case 1: s.erase(pos, 1 + pick(20)); break;
        case 2: s.insert(pos, kFragments[pick(std::size(kFragments))]); break;
        case 3: s.insert(pos, 1, static_cast<char>(pick(256))); break;
        case 4: { // duplicate a chunk somewhere else
            const size_t from = pick(s.size() + 1);
            const std::string chunk = s.substr(from, 1 + pick(200));
            s.insert(pick(s.size() + 1), chunk);
            break;
        }
        default: // replace one byte by a structural character
            if (pos < s.size()) s[pos] = "{}%#()[]|'\"-+ \n"[pick(15)];
            break;
        }
    }
    return s;
}

} // namespace

class TestChatTemplateFuzz : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void mutatedTemplatesNeverCrashOrHang() {
        HEARTH_REQUIRE_TEST_FILE("templates/cases.json");
        const ordered_json cases = ordered_json::parse(readFile(test::testDataPath("templates/cases.json")));
        std::vector<std::string> sources;
        std::vector<ordered_json> tokenSets;
        for (auto it = cases["template_vars"].begin(); it != cases["template_vars"].end(); ++it) {
            sources.push_back(readFile(test::testDataPath(QString::fromStdString("templates/" + it.key() + ".jinja"))));
            tokenSets.push_back(it.value());
        }
        QCOMPARE(sources.size(), size_t(10));

        tmpl::RenderOptions options;
        options.clock = [] { return tmpl::DateTime{2026, 1, 15, 0, 0, 0}; };
        options.limits.maxSteps = 2'000'000;
        options.limits.maxLoopIterations = 200'000;

        // HEARTH_FUZZ_ITERATIONS / HEARTH_FUZZ_SEED allow longer local runs (e.g. under sanitizers).
        const int iterations = qEnvironmentVariableIsSet("HEARTH_FUZZ_ITERATIONS")
                                   ? qEnvironmentVariableIntValue("HEARTH_FUZZ_ITERATIONS")
                                   : 5000;
        const unsigned seed = qEnvironmentVariableIsSet("HEARTH_FUZZ_SEED")
                                  ? static_cast<unsigned>(qEnvironmentVariableIntValue("HEARTH_FUZZ_SEED"))
                                  : 20260115u;
        std::mt19937 rng(seed);
        int parsed = 0, rendered = 0, renderErrors = 0;
        qint64 slowest = 0;
        QElapsedTimer total;
        total.start();
        for (int i = 0; i < iterations; ++i) {
            const size_t which = rng() % sources.size();
            const std::string variant = mutate(sources[which], rng);
            QElapsedTimer one;
            one.start();
            Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(variant);
            if (t.isOk()) {
                ++parsed;
                const ordered_json& c = cases["cases"][rng() % cases["cases"].size()];
                ordered_json withTokens = c;
                withTokens.erase("continue_final_message");
                for (auto it = tokenSets[which].begin(); it != tokenSets[which].end(); ++it)
                    withTokens[it.key()] = it.value();
                Result<tmpl::ChatRequest> req = tmpl::chatRequestFromJson(withTokens.dump());
                QVERIFY2(req.isOk(), req.status().toString().c_str());
                Result<std::string> out = tmpl::applyChatTemplate(*t, *req, options);
                if (out.isOk()) {
                    ++rendered;
                } else {
                    ++renderErrors;
                    QVERIFY(!out.status().message().empty() || out.status().code() == ErrorCode::InvalidArgument);
                }
            } else {
                QVERIFY(!t.status().message().empty());
            }
            slowest = std::max(slowest, one.elapsed());
        }
        qInfo("%d variants (seed %u): %d parsed (%d rendered, %d render errors), %d syntax errors; slowest %lld ms, "
              "total %lld ms",
              iterations, seed, parsed, rendered, renderErrors, iterations - parsed, static_cast<long long>(slowest),
              static_cast<long long>(total.elapsed()));
        QVERIFY2(slowest < 5000, "one variant took more than 5 s");
        QVERIFY2(total.elapsed() < 120000 || iterations > 5000, "the fuzz run took more than 2 minutes");
        QVERIFY(parsed > iterations / 50); // the mutations leave many templates valid, so rendering is exercised
    }
};

QTEST_GUILESS_MAIN(TestChatTemplateFuzz)
#include "test_chat_template_fuzz.moc"
