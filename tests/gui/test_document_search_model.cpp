// The file search model: the dialog offers the library's embedding models (BERT-family files that
// read; others and broken ones are not offered) or none, keeps a chosen file that left the
// library, and the main window saves the choice, loads it (a synthesized BGE-shaped bert), loads
// it again when the app starts again, and lets it go when none is chosen.
#include "embedding_model_dialog.h"
#include "main_window.h"

#include "encoder_test_support.h"
#include "services/embedding_service.h"
#include "test_support.h"

#include <QComboBox>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

app::ModelEntry libraryEntry(const QString& path, const QString& architecture, const QString& error = {}) {
    app::ModelEntry e;
    e.path = path;
    e.fileName = path.section(QLatin1Char('/'), -1);
    e.architecture = architecture;
    e.name = e.fileName;
    e.error = error;
    return e;
}

} // namespace

class TestDocumentSearchModel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentSearchDialogOffersEmbeddingModels() {
        const QList<app::ModelEntry> library{libraryEntry(QStringLiteral("/m/llama.gguf"), QStringLiteral("llama")),
                                             libraryEntry(QStringLiteral("/m/bge.gguf"), QStringLiteral("bert")),
                                             libraryEntry(QStringLiteral("/m/nomic.gguf"), QStringLiteral("nomic-bert")),
                                             libraryEntry(QStringLiteral("/m/bad.gguf"), QStringLiteral("bert"), QStringLiteral("truncated"))};
        ui::EmbeddingModelDialog dialog(library, QString());
        QCOMPARE(dialog.choices()->count(), 3); // none, bge, nomic
        QCOMPARE(dialog.chosenPath(), QString());
        dialog.choices()->setCurrentIndex(2);
        QCOMPARE(dialog.chosenPath(), QStringLiteral("/m/nomic.gguf"));
        ui::EmbeddingModelDialog kept(library, QStringLiteral("/gone/e5.gguf"));
        QCOMPARE(kept.choices()->count(), 4);
        QCOMPARE(kept.chosenPath(), QStringLiteral("/gone/e5.gguf"));
        ui::EmbeddingModelDialog empty({library[0]}, QString());
        QCOMPARE(empty.choices()->count(), 1);
    }

    void documentSearchModelIsSavedAndLoaded() {
        const QString vocab = test::bgeVocabPath();
        if (!QFile::exists(vocab)) QSKIP("the reference's BGE vocabulary is not here (HEARTH_REF)");
        QTemporaryDir data, models;
        const std::string bert = models.filePath(QStringLiteral("bge-tiny.gguf")).toStdString();
        const QString error = test::synthPreset(QStringLiteral("bert-tiny"), QStringLiteral("F32"), vocab, bert);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        qputenv("HEARTH_MODELS_DIR", models.path().toUtf8());
        {
            ui::MainWindow window(data.path());
            window.dismissWelcome();
            QSignalSpy loaded(window.embeddingService(), &app::EmbeddingService::loaded);
            window.setEmbeddingModel(QString::fromStdString(bert));
            QVERIFY(loaded.wait(60000));
            QCOMPARE(window.embeddingService()->dimensions(), 256);
        }
        {
            ui::MainWindow again(data.path());
            again.dismissWelcome();
            QTRY_VERIFY_WITH_TIMEOUT(again.embeddingService()->isLoaded(), 60000);
            QCOMPARE(again.embeddingService()->modelPath(), QString::fromStdString(bert));
            again.setEmbeddingModel(QString());
            QVERIFY(!again.embeddingService()->isLoaded());
        }
        ui::MainWindow third(data.path());
        QTest::qWait(200);
        QVERIFY(!third.embeddingService()->isLoaded());
        QVERIFY(third.embeddingService()->modelPath().isEmpty());
    }
};

QTEST_MAIN(TestDocumentSearchModel)
#include "test_document_search_model.moc"
