// The check the vision reference tests share: `hearth-cli run --mmproj --image` gives llama.cpp's
// mtmd its prompt's text ids around the image's placeholders and its greedy answer, token for
// token, on the CPU and (where there is one) vulkan:0 (checkCliGreedyAboutAnImage).
#pragma once

#include "hearth/devices.h"
#include "hearth/image.h"
#include "mtmd_reference.h"
#include "test_support.h"

#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QtTest>
#include <fstream>

namespace hearth::test {

// Writes the picture into `dir` (raw RGB for mtmd's tool, PNG for Hearth's command line), runs
// ref_mtmd_logits (at refTool) and hearth-cli on the same prompt, and compares. A failed check
// fails the calling test function and returns from here.
inline void checkCliGreedyAboutAnImage(const QString& refTool, const QString& model, const QString& projector,
                                       const Image& image, const QString& dir, int tokens = 8) {
    const QString rgb = dir + QStringLiteral("/cli.rgb"), out = dir + QStringLiteral("/cli.f32"),
                  png = dir + QStringLiteral("/cli.png");
    writeRgb(image, rgb);
    QImage q(reinterpret_cast<const uchar*>(image.rgb.data()), image.width, image.height, image.width * 3,
             QImage::Format_RGB888);
    QVERIFY(q.save(png, "PNG"));
    const QString prompt = QStringLiteral("Look: <__media__> What is it?");
    QProcess ref;
    ref.start(refTool, {model, projector, rgb, QString::number(image.width), QString::number(image.height), prompt,
                        out, QString::number(tokens)});
    QVERIFY(ref.waitForFinished(300000));
    QVERIFY2(ref.exitCode() == 0, ref.readAllStandardError().right(3000).constData());
    QStringList textIds, greedy;
    int64_t imageTokens = 0, before = -1; // the image's place: text ids before it
    for (const QString& line : QString::fromUtf8(ref.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts)) {
        QStringList w = line.split(' ', Qt::SkipEmptyParts);
        const QString kind = w.takeFirst();
        if (kind == QStringLiteral("text")) textIds << w;
        if (kind == QStringLiteral("image")) {
            imageTokens = w[0].toLongLong();
            before = textIds.size();
        }
        if (kind == QStringLiteral("greedy")) greedy = w;
    }
    QCOMPARE(greedy.size(), tokens);
    QStringList devices{QStringLiteral("cpu")};
    if (findDevice(listDevices(), "vulkan:0")) devices << QStringLiteral("vulkan:0");
    for (const QString& device : devices) {
        QProcess run;
        run.start(binDir() + QStringLiteral("/hearth-cli"),
                  {QStringLiteral("run"), model, QStringLiteral("--mmproj"), projector, QStringLiteral("--image"), png,
                   QStringLiteral("-p"), prompt, QStringLiteral("--temp"), QStringLiteral("0"), QStringLiteral("-n"),
                   QString::number(tokens), QStringLiteral("--print-ids"), QStringLiteral("--device"), device,
                   QStringLiteral("--threads"), QStringLiteral("2")});
        QVERIFY(run.waitForFinished(300000));
        QVERIFY2(run.exitCode() == 0, run.readAllStandardError().right(3000).constData());
        QStringList promptIds, generated;
        for (const QString& line : QString::fromUtf8(run.readAllStandardOutput()).split('\n')) {
            if (line.startsWith(QStringLiteral("prompt ids: "))) promptIds = line.mid(12).split(' ', Qt::SkipEmptyParts);
            if (line.startsWith(QStringLiteral("generated ids: "))) generated = line.mid(15).split(' ', Qt::SkipEmptyParts);
        }
        // The text's ids around the image's placeholders are mtmd's chunks'.
        QCOMPARE(promptIds.size(), textIds.size() + int(imageTokens));
        QVERIFY(before > 0);
        const QStringList text = promptIds.mid(0, int(before)) + promptIds.mid(int(before + imageTokens));
        QCOMPARE(text, textIds);
        qInfo("%s: %lld image tokens, greedy %s", qPrintable(device), (long long)imageTokens,
              qPrintable(generated.join(' ')));
        QCOMPARE(generated, greedy);
    }
}

} // namespace hearth::test
