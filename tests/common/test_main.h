// Every Qt Test executable's main() (force-included by hearth_add_test): runs the test object as
// QTest::qExec does, also writing a TAP log it reads back, and exits with 77 (CTest's
// SKIP_RETURN_CODE) when nothing failed and every test function was skipped, so CTest reports
// such a test as skipped rather than passed. Partly skipped executables say how many of their
// functions were skipped in one "hearth-test:" line that scripts/test-all.sh counts.
#pragma once

#include <QFile>
#include <QStringList>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdio>

namespace hearth::test {

inline constexpr int kSkipExitCode = 77;

inline int runTestObject(QObject* testObject, int argc, char** argv) {
    QStringList args;
    for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
    // A caller that chose its own output (-o, -txt, -xml, ...) gets plain qExec.
    for (int i = 1; i < args.size(); ++i)
        if (args[i] == QLatin1String("-o") || args[i] == QLatin1String("-txt") || args[i] == QLatin1String("-xml") ||
            args[i] == QLatin1String("-junitxml") || args[i] == QLatin1String("-tap") || args[i] == QLatin1String("-csv") ||
            args[i] == QLatin1String("-functions") || args[i] == QLatin1String("-datatags") || args[i] == QLatin1String("-help"))
            return QTest::qExec(testObject, argc, argv);
    QTemporaryDir dir;
    const QString tap = dir.path() + QStringLiteral("/result.tap");
    args << QStringLiteral("-o") << tap + QStringLiteral(",tap") << QStringLiteral("-o") << QStringLiteral("-,txt");
    const int rc = QTest::qExec(testObject, args);
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

} // namespace hearth::test

#undef QTEST_MAIN_WRAPPER
#define QTEST_MAIN_WRAPPER(TestObject, ...)                                                        \
    int main(int argc, char* argv[]) {                                                             \
        QT_PREPEND_NAMESPACE(QTest::Internal::callInitMain)<TestObject>();                         \
        __VA_ARGS__                                                                                \
        TestObject tc;                                                                             \
        QTEST_SET_MAIN_SOURCE_PATH                                                                 \
        return ::hearth::test::runTestObject(&tc, argc, argv);                                     \
    }
