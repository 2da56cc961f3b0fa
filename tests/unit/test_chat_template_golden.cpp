// Golden tests of the chat-template engine: every case of every template in the shared data,
// rendered as transformers does (README steps 1-4), compared byte for byte with Python Jinja2's
// output, or expected to fail (raise_exception messages compared exactly).
#include "hearth/chat_template.h"
#include "test_support.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>
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

ordered_json readJson(const std::string& path) { return ordered_json::parse(readFile(path)); }

tmpl::RenderOptions frozenClock() {
    tmpl::RenderOptions o;
    o.clock = [] { return tmpl::DateTime{2026, 1, 15, 0, 0, 0}; };
    return o;
}

// First differing byte, with a little context, for failure messages.
std::string describeDiff(const std::string& got, const std::string& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    auto ctx = [&](const std::string& s) {
        const size_t from = i > 30 ? i - 30 : 0;
        return ordered_json(s.substr(from, 80)).dump();
    };
    return "first difference at byte " + std::to_string(i) + " (got " + std::to_string(got.size()) + " bytes, want " +
           std::to_string(want.size()) + ")\n      got:  " + ctx(got) + "\n      want: " + ctx(want);
}

} // namespace

class TestChatTemplateGolden : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        HEARTH_REQUIRE_TEST_FILE("templates/cases.json");
        m_cases = readJson(test::testDataPath("templates/cases.json"));
        m_manifest = readJson(test::testDataPath("templates/manifest.json"));
    }

    void golden_data() {
        QTest::addColumn<QString>("name");
        const ordered_json cases = readJson(test::testDataPath("templates/cases.json"));
        for (auto it = cases["template_vars"].begin(); it != cases["template_vars"].end(); ++it)
            QTest::newRow(it.key().c_str()) << QString::fromStdString(it.key());
    }

    void golden() {
        QFETCH(QString, name);
        const std::string base = "templates/" + name.toStdString();
        const std::string source = readFile(test::testDataPath(QString::fromStdString(base + ".jinja")));
        const ordered_json expected = readJson(test::testDataPath(QString::fromStdString(base + ".expected.json")));
        const ordered_json& vars = m_cases["template_vars"][name.toStdString()];

        Result<tmpl::ChatTemplate> parsed = tmpl::ChatTemplate::parse(source);
        QVERIFY2(parsed.isOk(), parsed.status().toString().c_str());

        int passed = 0, total = 0, outputs = 0, errors = 0;
        std::string failures;
        for (const ordered_json& c : m_cases["cases"]) {
            const std::string id = c["id"].get<std::string>();
            if (!expected.contains(id)) continue;
            ++total;
            const ordered_json& want = expected[id];

            // The case with the template's special tokens, read as hearth-cli template reads a request.
            ordered_json withTokens = c;
            for (auto it = vars.begin(); it != vars.end(); ++it) withTokens[it.key()] = it.value();
            Result<tmpl::ChatRequest> req = tmpl::chatRequestFromJson(withTokens.dump());
            QVERIFY2(req.isOk(), req.status().toString().c_str());

            Result<std::string> got = tmpl::applyChatTemplate(*parsed, *req, frozenClock());
            if (want.contains("output")) {
                ++outputs;
                const std::string w = want["output"].get<std::string>();
                if (!got.isOk())
                    failures += "  " + id + ": failed: " + got.status().toString() + "\n";
                else if (*got != w)
                    failures += "  " + id + ": " + describeDiff(*got, w) + "\n";
                else
                    ++passed;
            } else {
                ++errors;
                const std::string kind = want["error_kind"].get<std::string>();
                if (got.isOk())
                    failures += "  " + id + ": rendered, but the reference failed (" + kind + ")\n";
                else if (kind == "raise_exception" && got.status().message() != want["error"].get<std::string>())
                    failures += "  " + id + ": wrong message: '" + got.status().message() + "'\n";
                else
                    ++passed;
            }
        }
        const ordered_json& m = m_manifest["templates"][name.toStdString()];
        QCOMPARE(total, m["cases"].get<int>());
        QCOMPARE(outputs, m["outputs"].get<int>());
        QCOMPARE(errors, static_cast<int>(m["errors"].size()));
        qInfo("%-45s %2d/%2d cases pass (%d outputs, %d expected errors)", name.toStdString().c_str(), passed, total,
              outputs, errors);
        m_passed += passed;
        m_total += total;
        QVERIFY2(failures.empty(), ("\n" + failures).c_str());
    }

    void cleanupTestCase() { qInfo("total: %d/%d renderings match", m_passed, m_total); }

private:
    ordered_json m_cases;
    ordered_json m_manifest;
    int m_passed = 0;
    int m_total = 0;
};

QTEST_GUILESS_MAIN(TestChatTemplateGolden)
#include "test_chat_template_golden.moc"
