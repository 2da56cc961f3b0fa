// QuantizeDialog offscreen: the model is read off the GUI thread (an unreadable one is said so);
// every offered type shows a size estimate; the calibration box follows
// the type (disabled for Q8_0, required for IQ2_XS); Quantize writes the output into the library
// folder and the library lists it, with the GUI thread kept responsive; Cancel stops a running
// job and leaves no file.
#include "quantize_dialog.h"

#include "hearth/synth.h"
#include "services/model_library.h"
#include "test_support.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

using namespace hearth;

namespace {

void waitForScan(app::ModelLibrary& library) {
    QSignalSpy done(&library, &app::ModelLibrary::scanningChanged);
    library.refresh();
    QTRY_VERIFY_WITH_TIMEOUT(!library.isScanning(), 20000);
}

} // namespace

class TestQuantizeDialog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void typesEstimatesAndCalibration() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const QString model = dir.filePath(QStringLiteral("models/stories260K.gguf"));
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("models"))));
        QVERIFY(QFile::copy(QString::fromStdString(test::testDataPath(QStringLiteral("models/stories260K.gguf"))), model));
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        waitForScan(library);
        ui::QuantizeDialog dialog(&library, model);
        // The dialog reads nothing itself: the tensor list comes from the job's worker thread.
        QVERIFY2(dialog.headerLabel()->text().contains(QStringLiteral("reading")), qPrintable(dialog.headerLabel()->text()));
        QVERIFY(!dialog.startButton()->isEnabled());
        dialog.show();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.startButton()->isEnabled(), 10000);
        QVERIFY2(dialog.headerLabel()->text().contains(QStringLiteral("of weights")), qPrintable(dialog.headerLabel()->text()));
        QVERIFY(dialog.typeBox()->count() >= 10);
        for (int i = 0; i < dialog.typeBox()->count(); ++i)
            QVERIFY2(dialog.typeBox()->itemText(i).contains(QStringLiteral("about")), qPrintable(dialog.typeBox()->itemText(i)));
        QCOMPARE(dialog.selectedType(), QStringLiteral("Q4_K_M")); // the default
        QVERIFY(dialog.calibrationEdit()->isEnabled());
        QVERIFY(dialog.selectType(QStringLiteral("Q8_0")));
        QVERIFY(!dialog.calibrationEdit()->isEnabled());
        QVERIFY(dialog.estimateLabel()->text().contains(QStringLiteral("%")));
        QVERIFY(dialog.selectType(QStringLiteral("IQ2_XS")));
        QVERIFY(dialog.calibrationEdit()->isEnabled());
        QVERIFY(!dialog.selectType(QStringLiteral("Q9_Z")));
        // IQ2_XS without calibration text: refused with a reason, nothing written.
        dialog.startButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.statusLabel()->text().contains(QStringLiteral("calibration")), 5000);
        QVERIFY(!QFileInfo::exists(dialog.outputPath()));

        QVERIFY(dialog.selectType(QStringLiteral("Q8_0")));
        const QString out = dialog.outputPath();
        QCOMPARE(out, dir.filePath(QStringLiteral("models/stories260K-Q8_0.gguf")));
        QSignalSpy quantized(&dialog, &ui::QuantizeDialog::quantized);
        QSignalSpy listed(&library, &app::ModelLibrary::modelsChanged);
        // The GUI thread's heartbeat while the job runs.
        QElapsedTimer beat;
        qint64 worst = 0;
        QTimer heart;
        heart.setInterval(2);
        connect(&heart, &QTimer::timeout, this, [&] {
            if (beat.isValid()) worst = std::max(worst, beat.elapsed());
            beat.restart();
        });
        heart.start();
        dialog.startButton()->click();
        QVERIFY(!dialog.typeBox()->isEnabled()); // locked while running
        QTRY_VERIFY_WITH_TIMEOUT(!quantized.isEmpty(), 60000);
        heart.stop();
        qInfo("longest GUI-thread gap while quantizing: %lld ms", static_cast<long long>(worst));
        // A hang guard, not a speed figure: the quantization never runs on the GUI thread.
        QVERIFY2(worst < 1000, qPrintable(QString::number(worst)));
        QCOMPARE(quantized.first().first().toString(), out);
        QVERIFY(QFileInfo::exists(out));
        QCOMPARE(dialog.progressBar()->value(), 1000);
        QTRY_VERIFY_WITH_TIMEOUT(library.find(out) != nullptr, 20000);
        QCOMPARE(library.find(out)->quantization, QStringLiteral("Q8_0"));
        QCOMPARE(dialog.cancelButton()->text(), QStringLiteral("Close"));
    }

    // A file that is not a GGUF model: the dialog says so (the reader's reason) and offers nothing to start.
    void unreadableModelIsSaid() {
        QTemporaryDir dir;
        const QString bogus = dir.filePath(QStringLiteral("notes.gguf"));
        QFile f(bogus);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a model");
        f.close();
        ui::QuantizeDialog dialog(nullptr, bogus);
        dialog.show();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.headerLabel()->text().contains(QStringLiteral("cannot be read")), 10000);
        QVERIFY(!dialog.startButton()->isEnabled());
        QVERIFY(!dialog.typeBox()->isEnabled());
        QCOMPARE(dialog.estimateLabel()->text(), QStringLiteral("unknown"));
    }

    void cancelStopsAndLeavesNothing() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        QTemporaryDir dir;
        QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("models"))));
        SynthOptions o;
        o.preset = "llama-tiny";
        o.typeOrMix = "F32";
        o.vocabPath = test::testDataPath(QStringLiteral("models/ggml-vocab-llama-spm.gguf"));
        o.layers = 2;
        o.threads = 2;
        const QString model = dir.filePath(QStringLiteral("models/llama-tiny-F32.gguf"));
        o.outPath = model.toStdString();
        const Status s = synthesizeModel(o);
        QVERIFY2(s.isOk(), s.toString().c_str());
        app::ModelLibrary library(dir.filePath(QStringLiteral("models")));
        waitForScan(library);
        ui::QuantizeDialog dialog(&library, model);
        dialog.show();
        QTRY_VERIFY_WITH_TIMEOUT(dialog.startButton()->isEnabled(), 10000);
        QVERIFY(dialog.selectType(QStringLiteral("IQ2_XS")));
        QString text;
        for (int i = 0; i < 40; ++i) text += QStringLiteral("The quick brown fox jumps over the lazy dog near the river bank. ");
        dialog.calibrationEdit()->setPlainText(text);
        const QString out = dialog.outputPath();
        QVERIFY(out.endsWith(QStringLiteral("llama-tiny-IQ2_XS.gguf")));
        dialog.startButton()->click();
        QVERIFY(dialog.isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(dialog.progressBar()->value() > 0, 20000);
        dialog.cancelButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(!dialog.isRunning(), 10000);
        QVERIFY2(dialog.statusLabel()->text().contains(QStringLiteral("Cancelled")), qPrintable(dialog.statusLabel()->text()));
        QVERIFY(dialog.isVisible()); // Cancel stops the job; the dialog says so and stays
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(QDir(dir.filePath(QStringLiteral("models"))).entryList({QStringLiteral("*.tmp-*")}, QDir::Files).size(), 0);
        QVERIFY(dialog.typeBox()->isEnabled());
        dialog.cancelButton()->click(); // now it closes
        QVERIFY(!dialog.isVisible());
    }
};

QTEST_MAIN(TestQuantizeDialog)
#include "test_quantize_dialog.moc"
