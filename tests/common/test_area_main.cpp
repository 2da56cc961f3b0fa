// The main() of a directory's test executable (tests_unit, tests_model, ...): runs the test file
// named by its first argument ("tests_unit test_gguf -v2"), as that file's own main() would, with
// the remaining arguments; with no name, or one it does not know, lists the tests it holds.
#include "test_main.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace hearth::test {

namespace {

std::map<std::string, TestEntry>& registry() {
    static std::map<std::string, TestEntry> tests;
    return tests;
}

std::string& current() {
    static std::string name;
    return name;
}

} // namespace

bool registerTest(const char* file, TestEntry entry) {
    std::string stem = file;
    if (const size_t slash = stem.find_last_of('/'); slash != std::string::npos) stem.erase(0, slash + 1);
    if (const size_t dot = stem.find_last_of('.'); dot != std::string::npos) stem.erase(dot);
    registry()[stem] = entry;
    return true;
}

QStringList selfCommand() {
    return {QCoreApplication::applicationFilePath(), QString::fromStdString(current())};
}

} // namespace hearth::test

int main(int argc, char** argv) {
    const auto& tests = hearth::test::registry();
    const auto found = argc >= 2 ? tests.find(argv[1]) : tests.end();
    if (found == tests.end()) {
        std::fprintf(stderr, "usage: %s TEST [Qt Test options]\n%s%s%stests here:\n", argv[0],
                     argc >= 2 ? "no test named '" : "", argc >= 2 ? argv[1] : "", argc >= 2 ? "'; " : "");
        for (const auto& [name, entry] : tests) std::fprintf(stderr, "  %s\n", name.c_str());
        return 2;
    }
    hearth::test::current() = found->first;
    // The test sees the command line its own executable would: the program, then its options.
    argv[1] = argv[0];
    return found->second(argc - 1, argv + 1);
}
