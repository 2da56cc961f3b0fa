// `hearth-cli run` as a user runs it: stories260K greedy from "Once upon a time" prints the
// reference's text and ids, and --logits-out matches the reference's logits dump.
#include "test_support.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

class TestCliRun : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void greedyMatchesReference() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const QString logits = dir.filePath(QStringLiteral("logits.f32"));
        QProcess p;
        p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("run"),
                 QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")),
                 QStringLiteral("-p"), QStringLiteral("Once upon a time"), QStringLiteral("-n"),
                 QStringLiteral("64"), QStringLiteral("--temp"), QStringLiteral("0"),
                 QStringLiteral("--print-ids"), QStringLiteral("--logits-out"), logits});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.startsWith(QStringLiteral(
                     ", there was a little girl named Lily. She loved to play outside in the park. "
                     "One day, she saw a big, red ball. She wanted to play with it, but it was too "
                     "high.\nLily's mom said")),
                 qPrintable(out));
        QVERIFY(out.contains(QStringLiteral("prompt ids: 1 403 407 261 378\n")));
        QVERIFY(out.contains(QStringLiteral(
            "generated ids: 432 383 286 261 376 298 315 421 395 317 426 338 401 396 267 337 410 "
            "408 419 292 411 322 265 282 295 433 426 385 328 432 358 394 261 370 432 352 266 268 "
            "388 426 338 391 266 267 337 335 312 432 398 312 286 267 414 270 333 415 426 13 438 "
            "310 439 419 357 336\n")));

        QFile ours(logits), ref(QString::fromStdString(
                                hearth::test::testDataPath("models/stories260K.ref-logits-fa0-kvf32.f32")));
        QVERIFY(ours.open(QIODevice::ReadOnly) && ref.open(QIODevice::ReadOnly));
        const QByteArray a = ours.readAll(), b = ref.readAll();
        QCOMPARE(a.size(), b.size());
        const auto* x = reinterpret_cast<const float*>(a.constData());
        const auto* y = reinterpret_cast<const float*>(b.constData());
        double maxDiff = 0.0;
        for (qsizetype i = 0; i < a.size() / 4; ++i)
            maxDiff = std::max(maxDiff, double(std::fabs(x[i] - y[i])));
        QVERIFY2(maxDiff < 2e-2, qPrintable(QString::number(maxDiff)));
    }

    void chatAppliesTheTemplateAndStopEndsBeforeTheMatch() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const QString model = QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf"));
        const QString cli = hearth::test::binDir() + QStringLiteral("/hearth-cli");
        QProcess tok;
        tok.start(cli, {QStringLiteral("tokenize"), model,
                        QStringLiteral("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"),
                        QStringLiteral("--add-special"), QStringLiteral("--parse-special")});
        QVERIFY(tok.waitForFinished(30000));
        QCOMPARE(tok.exitCode(), 0);
        const QString ids = QString::fromUtf8(tok.readAllStandardOutput()).trimmed();
        QProcess p;
        p.start(cli, {QStringLiteral("run"), model, QStringLiteral("-p"), QStringLiteral("Hi"),
                      QStringLiteral("--chat"), QStringLiteral("-n"), QStringLiteral("8"),
                      QStringLiteral("--temp"), QStringLiteral("0"), QStringLiteral("--print-ids"),
                      QStringLiteral("--no-mmap")});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains(QStringLiteral("prompt ids: ") + ids + QStringLiteral("\n")), qPrintable(out + "|" + ids));
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(QStringLiteral("built-in ChatML")));

        p.start(cli, {QStringLiteral("run"), model, QStringLiteral("-p"), QStringLiteral("Once upon a time"),
                      QStringLiteral("-n"), QStringLiteral("64"), QStringLiteral("--temp"), QStringLiteral("0"),
                      QStringLiteral("--stop"), QStringLiteral("Lily"), QStringLiteral("--kv-type"),
                      QStringLiteral("f32")});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()), QStringLiteral(", there was a little girl named \n"));
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains(QStringLiteral("(stop)")));
    }

    void badInputExitsTwo() {
        QProcess p;
        p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("run"), QStringLiteral("/nonexistent.gguf"), QStringLiteral("-p"),
                 QStringLiteral("x")});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 2);
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(err.count('\n'), 1);
        QVERIFY(err.startsWith("hearth-cli: /nonexistent.gguf: "));
        p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"),
                {QStringLiteral("run"), QStringLiteral("m.gguf"), QStringLiteral("--bogus")});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 2);
    }
};

QTEST_GUILESS_MAIN(TestCliRun)
#include "test_cli_run.moc"
