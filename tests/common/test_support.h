// Helpers shared by the Qt Test executables: where the shared test data lives, where our built
// binaries are, which device the engine tests use, and skipping with a clear message when data is
// missing.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFileInfo>
#include <QString>
#include <QtTest>

#include <cstdlib>
#include <string>

namespace hearth::test {

// Folder with models/, templates/, tools/ (HEARTH_TEST_DATA, default ../shared).
inline QString testDataDir() {
    QByteArray env = qgetenv("HEARTH_TEST_DATA");
    if (!env.isEmpty()) return QString::fromLocal8Bit(env);
#ifdef HEARTH_TEST_DATA_DEFAULT
    return QStringLiteral(HEARTH_TEST_DATA_DEFAULT);
#else
    return QStringLiteral("../shared");
#endif
}

inline std::string testDataPath(const QString& relative) {
    return QDir(testDataDir()).filePath(relative).toStdString();
}

// Folder holding hearth-cli and friends (set by CTest).
inline QString binDir() {
    QByteArray env = qgetenv("HEARTH_BIN_DIR");
    if (!env.isEmpty()) return QString::fromLocal8Bit(env);
#ifdef HEARTH_BIN_DIR_DEFAULT
    return QStringLiteral(HEARTH_BIN_DIR_DEFAULT);
#else
    return QStringLiteral(".");
#endif
}

// The source tree (for test helpers compiled at run time).
inline QString sourceDir() {
    QByteArray env = qgetenv("HEARTH_SOURCE_DIR");
    if (!env.isEmpty()) return QString::fromLocal8Bit(env);
#ifdef HEARTH_SOURCE_DIR_DEFAULT
    return QStringLiteral(HEARTH_SOURCE_DIR_DEFAULT);
#else
    return QStringLiteral(".");
#endif
}

// The device the engine tests run the engine on: HEARTH_TEST_DEVICE (CTest runs some suites again
// on vulkan:0), or the CPU.
inline std::string testDevice() { return qEnvironmentVariable("HEARTH_TEST_DEVICE", QStringLiteral("cpu")).toStdString(); }

} // namespace hearth::test

// Skips the current test function with a message when a shared test file is absent.
#define HEARTH_REQUIRE_TEST_FILE(relativePath)                                                     \
    do {                                                                                           \
        const QString hearthPath_ = QDir(::hearth::test::testDataDir()).filePath(relativePath);   \
        if (!QFileInfo::exists(hearthPath_))                                                       \
            QSKIP(qPrintable(QStringLiteral("test data not found: %1 (set HEARTH_TEST_DATA)")     \
                                 .arg(hearthPath_)));                                              \
    } while (0)
