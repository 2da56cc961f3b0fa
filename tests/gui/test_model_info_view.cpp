// The model inspector view: loads a real GGUF off the GUI thread, fills its tables, refuses a
// malformed file with a message, and renders (a screenshot is saved next to the test binary).
#include "main_window.h"
#include "model_info_view.h"
#include "test_support.h"

#include <QApplication>
#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using hearth::ui::MainWindow;
using hearth::ui::ModelInfoView;

class TestModelInfoView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void loadsRealModel() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dataDir;
        MainWindow window(dataDir.path());
        window.resize(1000, 700);
        window.show();
        auto* view = window.findChild<ModelInfoView*>();
        QVERIFY(view);
        QSignalSpy spy(view, &ModelInfoView::loaded);
        window.inspectModel(QString::fromStdString(
            hearth::test::testDataPath(QStringLiteral("models/stories260K.gguf"))));
        QVERIFY(spy.wait(10000));
        QCOMPARE(spy.first().first().toBool(), true);

        auto* tensors = view->findChild<QTableWidget*>(QStringLiteral("tensorTable"));
        auto* metadata = view->findChild<QTableWidget*>(QStringLiteral("metadataTable"));
        QVERIFY(tensors && metadata);
        QCOMPARE(tensors->rowCount(), 48); // stories260K has 48 tensors (models/README.md)
        bool sawArch = false;
        for (int r = 0; r < metadata->rowCount(); ++r)
            if (metadata->item(r, 0)->text() == QLatin1String("general.architecture"))
                sawArch = metadata->item(r, 1)->text().contains(QLatin1String("llama"));
        QVERIFY(sawArch);

        const QImage shot = window.grab().toImage();
        QVERIFY(!shot.isNull());
        QVERIFY(shot.save(QStringLiteral("model_info_view.png")));
    }

    void refusesMalformedFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("bad.gguf"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("GGUF\x03\x00\x00\x00 not really a model", 30);
        f.close();
        ModelInfoView view;
        QSignalSpy loaded(&view, &ModelInfoView::loaded);
        QSignalSpy status(&view, &ModelInfoView::statusChanged);
        view.load(path);
        QVERIFY(loaded.wait(10000));
        QCOMPARE(loaded.first().first().toBool(), false);
        QVERIFY(!status.isEmpty());
        QVERIFY(status.last().first().toString().contains(QLatin1String("invalid format")));
        QCOMPARE(status.last().at(1).value<hearth::ui::StatusLevel>(), hearth::ui::StatusLevel::Error);
        auto* title = view.findChild<QLabel*>(QStringLiteral("titleLabel"));
        QVERIFY(title && title->text().startsWith(QLatin1String("Cannot open")));
    }
};

QTEST_MAIN(TestModelInfoView)
#include "test_model_info_view.moc"
