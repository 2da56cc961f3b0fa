// Tests for Status and Result<T>: values, errors, context and the early-return macros.
#include "hearth/status.h"

#include <QtTest>

using namespace hearth;

namespace {
Result<int> parsePositive(int v) {
    if (v <= 0) return invalidArgument("not positive: " + std::to_string(v));
    return v;
}
Result<int> doubled(int v) {
    HEARTH_ASSIGN_OR_RETURN(int x, parsePositive(v));
    return 2 * x;
}
Status check(int v) {
    HEARTH_RETURN_IF_ERROR(parsePositive(v).status());
    return Status::ok();
}
} // namespace

class TestStatus : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void okStatus() {
        Status s;
        QVERIFY(s.isOk());
        QCOMPARE(s.toString(), std::string("ok"));
    }
    void errorStatus() {
        Status s = invalidFormat("bad magic");
        QVERIFY(!s.isOk());
        QCOMPARE(s.code(), ErrorCode::InvalidFormat);
        QCOMPARE(s.toString(), std::string("invalid format: bad magic"));
        QCOMPARE(s.withContext("model.gguf").message(), std::string("model.gguf: bad magic"));
    }
    void resultValueAndError() {
        Result<int> good = doubled(4);
        QVERIFY(good.isOk());
        QCOMPARE(*good, 8);
        Result<int> bad = doubled(-1);
        QVERIFY(!bad.isOk());
        QCOMPARE(bad.status().code(), ErrorCode::InvalidArgument);
        QCOMPARE(bad.status().message(), std::string("not positive: -1"));
        QVERIFY(check(3).isOk());
        QVERIFY(!check(0).isOk());
    }
};

QTEST_GUILESS_MAIN(TestStatus)
#include "test_status.moc"
