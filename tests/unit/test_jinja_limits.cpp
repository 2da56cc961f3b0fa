// Robustness tests of the chat-template engine: syntax errors with line numbers, render errors
// with line numbers, the immutable sandbox, every render limit (nesting, loops, output and string
// size, steps, macro recursion), hostile data, and strftime_now on an injected clock.
#include "hearth/chat_template.h"
#include "tokenizer/chat_template/chat_json.h"

#include <QElapsedTimer>
#include <QtTest>

#include <string>

using namespace hearth;
using nlohmann::ordered_json;

namespace {

Result<std::string> renderSource(const std::string& source, const ordered_json& vars = ordered_json::object(),
                                 const tmpl::RenderOptions& options = {}) {
    Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(source);
    if (!t) return t.status();
    return tmpl::renderJson(*t, vars, options);
}

std::string repeat(const std::string& s, size_t n) {
    std::string out;
    out.reserve(s.size() * n);
    for (size_t i = 0; i < n; ++i) out += s;
    return out;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

#define EXPECT_ERROR_CONTAINING(result, text)                                                       \
    do {                                                                                           \
        const auto& r_ = (result);                                                                 \
        QVERIFY2(!r_.isOk(), "expected an error");                                                 \
        QVERIFY2(contains(r_.status().message(), text),                                             \
                 ("message '" + r_.status().message() + "' lacks '" + std::string(text) + "'").c_str()); \
    } while (0)

} // namespace

class TestJinjaLimits : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // ---- syntax errors ----
    void syntaxErrorsCarryLineNumbers_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("fragment");
        QTest::newRow("unclosed if") << "a\n{% if x %}\nb\n" << "line 2";
        QTest::newRow("unclosed for") << "{% for m in messages %}\n{{ m }}\n" << "'for' block from line 1";
        QTest::newRow("stray endfor") << "a\nb\nc\n{% endfor %}" << "line 4: unknown tag 'endfor'";
        QTest::newRow("unknown tag") << "\n{% frobnicate %}" << "line 2: unknown tag 'frobnicate'";
        QTest::newRow("missing expression") << "x\n\n{% if %}{% endif %}" << "line 3";
        QTest::newRow("empty print") << "{{ }}" << "line 1";
        QTest::newRow("dangling operator") << "\n{{ 1 + }}" << "line 2";
        QTest::newRow("for without in") << "{% for x %}{% endfor %}" << "expected 'in'";
        QTest::newRow("unterminated string") << "\n\n{{ 'abc }}" << "line 3";
        QTest::newRow("unterminated comment") << "a\n{# never closed" << "line 2: missing end of comment tag";
        QTest::newRow("unterminated raw") << "{% raw %}x" << "missing end of raw directive";
        QTest::newRow("unbalanced paren") << "{{ (1 + 2)) }}" << "unexpected ')'";
        QTest::newRow("mismatched bracket") << "{{ [1, 2) }}" << "expected ']'";
        QTest::newRow("unexpected char") << "{{ 1 $ 2 }}" << "unexpected char '$'";
        QTest::newRow("break outside loop") << "{% break %}" << "outside of a loop";
        QTest::newRow("elif after else") << "{% if a %}{% else %}{% elif b %}{% endif %}" << "unknown tag 'elif'";
        QTest::newRow("bad assignment") << "{% set 1 = 2 %}" << "can't assign";
        QTest::newRow("include refused") << "{% include 'other.jinja' %}" << "cannot load other templates";
        QTest::newRow("import refused") << "{% import 'm.jinja' as m %}" << "cannot load other templates";
        QTest::newRow("extends refused") << "{% extends 'base.jinja' %}" << "cannot load other templates";
        QTest::newRow("recursive loop") << "{% for x in y recursive %}{% endfor %}" << "recursive loops are not supported";
        QTest::newRow("default before plain") << "{% macro m(a=1, b) %}{% endmacro %}" << "non-default argument";
    }
    void syntaxErrorsCarryLineNumbers() {
        QFETCH(QString, source);
        QFETCH(QString, fragment);
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(source.toStdString());
        QVERIFY(!t.isOk());
        QCOMPARE(t.status().code(), ErrorCode::InvalidFormat);
        EXPECT_ERROR_CONTAINING(t, fragment.toStdString());
        QVERIFY(contains(t.status().message(), "chat template syntax error"));
    }

    void renderErrorsCarryLineNumbers() {
        EXPECT_ERROR_CONTAINING(renderSource("a\n\n{{ 1 + 'a' }}"), "line 3: unsupported operand type(s) for +: 'int' and 'str'");
        EXPECT_ERROR_CONTAINING(renderSource("{% for m in messages %}\n{{ m.content + 1 }}{% endfor %}",
                                             {{"messages", {{{"content", "x"}}}}}),
                                "line 2: can only concatenate str (not \"int\") to str");
        EXPECT_ERROR_CONTAINING(renderSource("\n{% for x in none %}{% endfor %}"), "line 2: 'NoneType' object is not iterable");
        EXPECT_ERROR_CONTAINING(renderSource("{{ x.y }}"), "line 1: 'x' is undefined");
        EXPECT_ERROR_CONTAINING(renderSource("{{ d.a.b }}", {{"d", ordered_json::object()}}), "'dict object' has no attribute 'a'");
        EXPECT_ERROR_CONTAINING(renderSource("{{ 1|nosuchfilter }}"), "no filter named 'nosuchfilter'");
    }

    void raiseExceptionMessageIsExact() {
        const std::string src = "{% macro check(m) %}{% if m.role == 'system' %}"
                                "{{ raise_exception('System role not supported') }}{% endif %}{% endmacro %}\n\n"
                                "{% for m in messages %}{{ check(m) }}{% endfor %}";
        Result<std::string> r = renderSource(src, {{"messages", {{{"role", "system"}}}}});
        QVERIFY(!r.isOk());
        QCOMPARE(r.status().message(), std::string("System role not supported"));
        QCOMPARE(renderSource("{{ raise_exception('') }}").status().message(), std::string());
    }

    // ---- sandbox ----
    void sandboxRefusesMutation_data() {
        QTest::addColumn<QString>("source");
        QTest::newRow("list.append") << "{% set l = [1] %}{{ l.append(2) }}";
        QTest::newRow("list.pop") << "{% set l = [1] %}{% set x = l.pop() %}";
        QTest::newRow("list.sort") << "{{ messages.sort() }}";
        QTest::newRow("list.clear") << "{{ messages.clear() }}";
        QTest::newRow("dict.update") << "{{ d.update({'a': 2}) }}";
        QTest::newRow("dict.pop") << "{{ d.pop('a') }}";
        QTest::newRow("dict.setdefault") << "{{ d.setdefault('b', 1) }}";
        QTest::newRow("dict.clear") << "{{ d.clear() }}";
        QTest::newRow("dunder chain") << "{{ ''.__class__.__mro__ }}";
        QTest::newRow("function globals") << "{{ range.__globals__.os }}";
        QTest::newRow("set attr on dict") << "{% set d.a = 5 %}";
    }
    void sandboxRefusesMutation() {
        QFETCH(QString, source);
        const ordered_json vars = {{"messages", {3, 1, 2}}, {"d", {{"a", 1}}}};
        Result<std::string> r = renderSource(source.toStdString(), vars);
        QVERIFY2(!r.isOk(), r.isOk() ? r->c_str() : "");
    }

    void sandboxUnsafeAttributesAreUndefined() {
        // Reading (not calling) a mutating method or a dunder gives a silent undefined, as in Jinja.
        Result<std::string> r = renderSource("[{{ l.append }}][{{ l.append is defined }}][{{ ''.__class__ }}][{{ d.__dict__ }}]",
                                             {{"l", {1}}, {"d", {{"a", 1}}}});
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(*r, std::string("[][False][][]"));
        // The inputs are never changed by a render.
        r = renderSource("{% set x = messages + [4] %}{{ messages }}{{ x }}", {{"messages", {1, 2, 3}}});
        QCOMPARE(*r, std::string("[1, 2, 3][1, 2, 3, 4]"));
    }

    void hostileContentIsData() {
        const std::string content = "{{ x }}{% for i in range(10**9) %}{% endfor %}{# c #}{% raw %}{{ raise_exception('no') }}";
        Result<std::string> r = renderSource("{% for m in messages %}<{{ m.content }}>{% endfor %}",
                                             {{"messages", {{{"content", content}}}}});
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(*r, "<" + content + ">");
        // Keys and strings with odd bytes are data too.
        r = renderSource("{{ d['{{'] }}{{ d|tojson }}", {{"d", {{"{{", "}}"}}}});
        QCOMPARE(*r, std::string("}}{\"{{\": \"}}\"}"));
    }

    // ---- limits ----
    void deepParenthesesAreAnError() {
        QElapsedTimer timer;
        timer.start();
        const std::pair<std::string, std::string> nests[] = {
            {"(", ")"}, {"[", "]"}, {"{'a':", "}"}, {"f(", ")"}, {"x[", "]"}, {"-", ""}, {"not ", ""}, {"x if y else ", ""}};
        for (const auto& [open, close] : nests) {
            const std::string src = "{{ " + repeat(open, 100000) + "1" + repeat(close, 100000) + " }}";
            Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(src);
            QVERIFY2(!t.isOk(), open.c_str());
            QVERIFY2(contains(t.status().message(), "nested too deeply"), t.status().message().c_str());
        }
        QVERIFY(timer.elapsed() < 10000);
    }

    void longChainsAreAnError() {
        // Left-leaning chains are built without recursion; their height is bounded too.
        for (const std::string& link : {std::string(" + 1"), std::string("|trim"), std::string(".a"), std::string("[0]"),
                                        std::string(" ~ 'x'"), std::string(" or 1"), std::string("()")}) {
            const std::string src = "{{ 1" + repeat(link, 100000) + " }}";
            Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(src);
            QVERIFY2(!t.isOk(), link.c_str());
            QVERIFY2(contains(t.status().message(), "nested too deeply"), t.status().message().c_str());
        }
        // A modest chain is fine.
        Result<std::string> r = renderSource("{{ 0" + repeat(" + 1", 300) + " }}");
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(*r, std::string("300"));
    }

    void deepBlocksAreAnError() {
        const std::string src = repeat("{% if true %}", 100000) + "x" + repeat("{% endif %}", 100000);
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(src);
        QVERIFY(!t.isOk());
        QVERIFY2(contains(t.status().message(), "nested too deeply"), t.status().message().c_str());
        // 50 levels are fine.
        Result<std::string> r = renderSource(repeat("{% if true %}", 50) + "x" + repeat("{% endif %}", 50));
        QCOMPARE(*r, std::string("x"));
    }

    void deepInputIsAnError() {
        ordered_json deep = 1;
        for (int i = 0; i < 5000; ++i) deep = ordered_json::array({std::move(deep)});
        Result<std::string> r = renderSource("{{ x|length }}", {{"x", deep}});
        EXPECT_ERROR_CONTAINING(r, "nested too deeply");
    }

    void hugeRangesAndLoopsStop() {
        QElapsedTimer timer;
        timer.start();
        EXPECT_ERROR_CONTAINING(renderSource("{% for i in range(10**9) %}x{% endfor %}"), "Range too big");
        EXPECT_ERROR_CONTAINING(renderSource("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
                                "loop limit");
        tmpl::RenderOptions small;
        small.limits.maxLoopIterations = 1000;
        EXPECT_ERROR_CONTAINING(renderSource("{% for i in range(2000) %}{% endfor %}", {}, small), "loop limit");
        QVERIFY(renderSource("{% for i in range(1000) %}{% endfor %}", {}, small).isOk());
        QVERIFY2(timer.elapsed() < 20000, "loop limits took too long");
    }

    void stepBudgetStops() {
        tmpl::RenderOptions small;
        small.limits.maxSteps = 100000;
        EXPECT_ERROR_CONTAINING(renderSource("{% for i in range(100000) %}{{ i + i * i - i }}{% endfor %}", {}, small),
                                "work limit");
    }

    void hugeOutputStops() {
        EXPECT_ERROR_CONTAINING(renderSource("{{ 'x' * 10**9 }}"), "limit");
        EXPECT_ERROR_CONTAINING(renderSource("{{ [0] * 10**9 }}"), "limit");
        EXPECT_ERROR_CONTAINING(renderSource("{% for i in range(100000) %}{{ 'abcdefghij' * 10 }}{% endfor %}"),
                                "output exceeds");
        EXPECT_ERROR_CONTAINING(renderSource("{% set ns = namespace(s='xy') %}{% for i in range(64) %}"
                                             "{% set ns.s = ns.s + ns.s %}{% endfor %}"),
                                "limit");
        EXPECT_ERROR_CONTAINING(renderSource("{% set ns = namespace(s='xy') %}{% for i in range(64) %}"
                                             "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
                                "limit");
        EXPECT_ERROR_CONTAINING(renderSource("{{ 'x'.center(10**9) }}"), "limit");
        EXPECT_ERROR_CONTAINING(renderSource("{{ '%10000000s' % 'x' }}"), "limit");
        tmpl::RenderOptions small;
        small.limits.maxOutputBytes = 100;
        EXPECT_ERROR_CONTAINING(renderSource(repeat("x", 101), {}, small), "output exceeds 100 bytes");
        QCOMPARE(*renderSource(repeat("x", 100), {}, small), repeat("x", 100));
    }

    void macroRecursionStops() {
        EXPECT_ERROR_CONTAINING(renderSource("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"), "nested deeper");
        tmpl::RenderOptions small;
        small.limits.maxCallDepth = 5;
        const std::string src = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}";
        QCOMPARE(*renderSource(src + "{{ f(4) }}", {}, small), std::string("01234"));
        EXPECT_ERROR_CONTAINING(renderSource(src + "{{ f(5) }}", {}, small), "nested deeper than 5");
    }

    void selfReferencesDoNotCrash() {
        // A namespace holding itself prints (with an elision) and cannot be serialized.
        Result<std::string> r = renderSource("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns|string|length > 0 }}");
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(*r, std::string("True"));
        QVERIFY(!renderSource("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me|tojson }}").isOk());
        // A 100000-long chain of namespaces is built and torn down without recursion.
        r = renderSource("{% set head = namespace(n=none) %}{% for i in range(100000) %}"
                         "{% set head.n = namespace(n=head.n) %}{% endfor %}done");
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(*r, std::string("done"));
        // Lists nested through a namespace hit the depth limit.
        EXPECT_ERROR_CONTAINING(renderSource("{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
                                             "{% set ns.l = [ns.l] %}{% endfor %}"),
                                "nested too deeply");
    }

    void oversizedSourceIsRefused() {
        tmpl::ParseOptions options;
        options.maxSourceBytes = 1000;
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(repeat("x", 1001), options);
        QVERIFY(!t.isOk());
        QVERIFY(tmpl::ChatTemplate::parse(repeat("x", 1000), options).isOk());
    }

    void variablesMustBeAnObject() {
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse("x");
        QVERIFY(!tmpl::renderJson(*t, ordered_json::array()).isOk());
        QCOMPARE(*tmpl::renderJson(*t, ordered_json()), std::string("x"));
    }

    // ---- strftime_now ----
    void strftimeUsesTheInjectedClock_data() {
        QTest::addColumn<int>("year");
        QTest::addColumn<int>("month");
        QTest::addColumn<int>("day");
        QTest::addColumn<int>("hour");
        QTest::addColumn<int>("minute");
        QTest::addColumn<int>("second");
        QTest::addColumn<QString>("expected");
        // Expected strings from Python's datetime.strftime in the C locale.
        QTest::newRow("leap day") << 2024 << 2 << 29 << 13 << 5 << 9
                                  << "Thu Thursday Feb February 29 29 13 01 060 02 05 PM 09 08 09 4 4 09 2024 24 2024 % 02/29/24 2024-02-29 13:05:09 29 2";
        QTest::newRow("iso week of previous year") << 2021 << 1 << 3 << 0 << 0 << 0
                                  << "Sun Sunday Jan January 03  3 00 12 003 01 00 AM 00 01 00 0 7 53 2020 21 2021 % 01/03/21 2021-01-03 00:00:00 3 1";
        QTest::newRow("new year's eve") << 2026 << 12 << 31 << 23 << 59 << 59
                                  << "Thu Thursday Dec December 31 31 23 11 365 12 59 PM 59 52 52 4 4 53 2026 26 2026 % 12/31/26 2026-12-31 23:59:59 31 12";
    }
    void strftimeUsesTheInjectedClock() {
        QFETCH(int, year);
        QFETCH(int, month);
        QFETCH(int, day);
        QFETCH(int, hour);
        QFETCH(int, minute);
        QFETCH(int, second);
        QFETCH(QString, expected);
        tmpl::RenderOptions o;
        o.clock = [=] { return tmpl::DateTime{year, month, day, hour, minute, second}; };
        Result<std::string> r = renderSource(
            "{{ strftime_now('%a %A %b %B %d %e %H %I %j %m %M %p %S %U %W %w %u %V %G %y %Y %% %D %F %T %-d %-m') }}", {}, o);
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        QCOMPARE(QString::fromStdString(*r), expected);
    }

    void strftimeDefaultsToTheLocalClock() {
        Result<std::string> r = renderSource("{{ strftime_now('%Y') }}");
        QVERIFY(r.isOk());
        QVERIFY(r->size() == 4 && std::stoi(*r) >= 2024);
    }
};

QTEST_GUILESS_MAIN(TestJinjaLimits)
#include "test_jinja_limits.moc"
