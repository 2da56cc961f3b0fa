// Every Qt Test file's entry point (test_main.h comes first in every test source, through the
// test executables' precompiled header): the tests of one directory share one executable
// (tests_<directory>, see tests/CMakeLists.txt), each test file registering its test object under
// its file's name; `tests_unit test_gguf [Qt Test options]` runs one. The test object runs as
// QTest::qExec does, also writing a TAP log it reads back, and exits with 77 (CTest's
// SKIP_RETURN_CODE) when nothing failed and every test function was skipped, so CTest reports
// such a test as skipped rather than passed. Partly skipped tests say how many of their
// functions were skipped in one "hearth-test:" line that scripts/test-all.sh counts, and every
// test names its three slowest functions (each one's data rows summed) in "hearth-test: function"
// lines, from which scripts/test-all.sh prints the suite's slowest functions.
#pragma once

#include <QFile>
#include <QStringList>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace hearth::test {

inline constexpr int kSkipExitCode = 77;

// A test split into parts (CTest runs part k of n with HEARTH_TEST_PART=k/n): the test functions
// of part k, every n-th from the k-th in the order the class declares them. Empty without the
// variable; an error when it is malformed or leaves the part empty.
inline bool partFunctions(const QObject* testObject, QStringList& functions) {
    const QByteArray part = qgetenv("HEARTH_TEST_PART");
    if (part.isEmpty()) return true;
    const QList<QByteArray> kn = part.split('/');
    bool okK = false, okN = false;
    const int k = kn.size() == 2 ? kn[0].toInt(&okK) : 0, n = kn.size() == 2 ? kn[1].toInt(&okN) : 0;
    if (!okK || !okN || n < 1 || k < 1 || k > n) {
        std::fprintf(stderr, "HEARTH_TEST_PART=%s: expected k/n with 1 <= k <= n\n", part.constData());
        return false;
    }
    const QMetaObject* mo = testObject->metaObject();
    int index = 0;
    for (int i = mo->methodOffset(); i < mo->methodCount(); ++i) {
        const QMetaMethod m = mo->method(i);
        const QByteArray name = m.name();
        if (m.methodType() != QMetaMethod::Slot || m.access() != QMetaMethod::Private || m.parameterCount() != 0 ||
            name == "initTestCase" || name == "cleanupTestCase" || name == "init" || name == "cleanup" ||
            name.endsWith("_data"))
            continue;
        if (index++ % n == k - 1) functions << QString::fromLatin1(name);
    }
    if (functions.isEmpty()) {
        std::fprintf(stderr, "HEARTH_TEST_PART=%s: no test function falls in this part (%d in all)\n", part.constData(), index);
        return false;
    }
    return true;
}

// Prints the three slowest functions of a JUnit XML log that Qt Test wrote: its testcase elements'
// times summed per function (a data-driven function's rows together; the fixtures left out).
inline void printSlowestFunctions(const QString& junitPath) {
    QFile f(junitPath);
    if (!f.open(QIODevice::ReadOnly)) return;
    std::vector<std::pair<double, QString>> times;
    QXmlStreamReader xml(&f);
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement || xml.name() != QLatin1String("testcase")) continue;
        const QXmlStreamAttributes a = xml.attributes();
        QString name = a.value(QLatin1String("name")).toString();
        name = name.left(name.indexOf(QLatin1Char('(')));
        if (name == QLatin1String("initTestCase") || name == QLatin1String("cleanupTestCase")) continue;
        const QString function = a.value(QLatin1String("classname")).toString() + QStringLiteral("::") + name;
        const double seconds = a.value(QLatin1String("time")).toDouble();
        auto it = std::find_if(times.begin(), times.end(), [&](const auto& t) { return t.second == function; });
        if (it == times.end()) times.emplace_back(seconds, function);
        else it->first += seconds;
    }
    std::sort(times.begin(), times.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    for (size_t i = 0; i < times.size() && i < 3; ++i)
        std::printf("hearth-test: function %.1f s %s\n", times[i].first, qPrintable(times[i].second));
}

inline int runTestObject(QObject* testObject, int argc, char** argv) {
    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    // A part of a split test runs its functions (unless the command line names functions itself).
    if (args.size() == 1) {
        QStringList functions;
        if (!partFunctions(testObject, functions)) return 2;
        args << functions;
    }
    // A caller that chose its own output (-o, -txt, -xml, ...) gets plain qExec.
    for (int i = 1; i < args.size(); ++i)
        if (args[i] == QLatin1String("-o") || args[i] == QLatin1String("-txt") || args[i] == QLatin1String("-xml") ||
            args[i] == QLatin1String("-junitxml") || args[i] == QLatin1String("-tap") || args[i] == QLatin1String("-csv") ||
            args[i] == QLatin1String("-functions") || args[i] == QLatin1String("-datatags") || args[i] == QLatin1String("-help"))
            return QTest::qExec(testObject, argc, argv);
    QTemporaryDir dir;
    const QString tap = dir.path() + QStringLiteral("/result.tap");
    const QString junit = dir.path() + QStringLiteral("/result.xml");
    args << QStringLiteral("-o") << tap + QStringLiteral(",tap") << QStringLiteral("-o") << junit + QStringLiteral(",junitxml")
         << QStringLiteral("-o") << QStringLiteral("-,txt");
    const int rc = QTest::qExec(testObject, args);
    printSlowestFunctions(junit);
    QFile f(tap);
    if (rc != 0 || !f.open(QIODevice::ReadOnly)) return rc;
    int passed = 0, skipped = 0;
    bool everythingSkipped = false;
    for (const QByteArray& raw : f.readAll().split('\n')) {
        const QByteArray line = raw.trimmed();
        if (!line.startsWith("ok ")) continue;
        const bool skip = line.contains("# SKIP");
        const bool fixture = line.contains(" - initTestCase()") || line.contains(" - cleanupTestCase()");
        if (line.contains(" - initTestCase()") && skip) everythingSkipped = true;
        if (fixture) continue;
        (skip ? skipped : passed) += 1;
    }
    if (everythingSkipped || (passed == 0 && skipped > 0)) {
        std::printf("hearth-test: skipped (every test function skipped)\n");
        return kSkipExitCode;
    }
    if (skipped > 0) std::printf("hearth-test: %d passed, %d skipped\n", passed, skipped);
    return rc;
}

// A test file's entry point: main() as it would be for an executable of its own.
using TestEntry = int (*)(int argc, char** argv);
// Registers `entry` under the stem of `file` ("tests/unit/test_gguf.cpp" -> "test_gguf"), for the
// shared main (tests/common/test_area_main.cpp). Returns true, for a static initializer.
bool registerTest(const char* file, TestEntry entry);
// The program and first arguments that run the test being run again, in a child process
// (tests that re-execute themselves with arguments of their own append those).
QStringList selfCommand();

} // namespace hearth::test

// Names made unique per translation unit (__COUNTER__), so that test files compiled together in
// a unity batch do not clash.
#define HEARTH_TEST_CAT2(a, b) a##b
#define HEARTH_TEST_CAT(a, b) HEARTH_TEST_CAT2(a, b)

// A test file with a main() of its own (one that also serves as a child process) registers it.
#define HEARTH_TEST_ENTRY(function) HEARTH_TEST_ENTRY_AS(function, HEARTH_TEST_CAT(hearthTestRegistered, __COUNTER__))
#define HEARTH_TEST_ENTRY_AS(function, flag)                                                       \
    namespace {                                                                                    \
    [[maybe_unused]] const bool flag = ::hearth::test::registerTest(__FILE__, &function);          \
    }

#undef QTEST_MAIN_WRAPPER
#define QTEST_MAIN_WRAPPER(TestObject, ...)                                                        \
    HEARTH_TEST_MAIN_AS(HEARTH_TEST_CAT(hearthTestMain, __COUNTER__), TestObject, __VA_ARGS__)
#define HEARTH_TEST_MAIN_AS(name, TestObject, ...)                                                 \
    namespace {                                                                                    \
    int name(int argc, char* argv[]) {                                                             \
        QT_PREPEND_NAMESPACE(QTest::Internal::callInitMain)<TestObject>();                         \
        __VA_ARGS__                                                                                \
        TestObject tc;                                                                             \
        QTEST_SET_MAIN_SOURCE_PATH                                                                 \
        return ::hearth::test::runTestObject(&tc, argc, argv);                                     \
    }                                                                                              \
    }                                                                                              \
    HEARTH_TEST_ENTRY(name)
