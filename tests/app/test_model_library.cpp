// ModelLibrary on a temporary models folder holding the real stories260K model, a broken file,
// a split model and a download in progress; import (copy and reference), delete, rescans, the
// list model under QAbstractItemModelTester, the starter list resource, and vision projectors
// (mmproj files) paired with their models and never listed as models themselves.
#include "services/model_library.h"
#include "services/model_list_model.h"

#include "gemma3_vision_files.h"
#include "test_support.h"

#include "hearth/projector.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <tuple>

using namespace hearth::app;

namespace {

QString storiesPath() { return QString::fromStdString(hearth::test::testDataPath("models/stories260K.gguf")); }

bool copyFile(const QString& from, const QString& to) {
    QDir().mkpath(QFileInfo(to).absolutePath());
    return QFile::copy(from, to);
}

void writeText(const QString& path, const QByteArray& text) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

bool rescan(ModelLibrary& lib) {
    QSignalSpy scanning(&lib, &ModelLibrary::scanningChanged);
    lib.refresh();
    for (int i = 0; i < 200; ++i) {
        if (!scanning.isEmpty() && !scanning.last().first().toBool()) return true;
        scanning.wait(50);
    }
    return false;
}

const ModelEntry* byFile(const ModelLibrary& lib, const QString& fileName) {
    for (const ModelEntry& e : lib.models())
        if (e.fileName == fileName) return &e;
    return nullptr;
}

// A tiny Gemma 3 style projector whose embeddings are `width` wide.
void writeProjector(const QString& path, int width) {
    hearth::ProjectorSynthOptions o;
    o.imageSize = 56;
    o.patchSize = 14;
    o.nEmbd = 32;
    o.nFf = 64;
    o.nLayer = 1;
    o.nHead = 2;
    o.merge = 2;
    o.projectionDim = width;
    o.outPath = path.toStdString();
    const hearth::Status st = hearth::synthesizeProjector(o);
    QVERIFY2(st.isOk(), st.toString().c_str());
}

} // namespace

class TestModelLibrary : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void scansAndReadsModels() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(copyFile(storiesPath(), folder + QStringLiteral("/stories260K.gguf")));
        QVERIFY(copyFile(storiesPath(), folder + QStringLiteral("/nested/deeper/tiny-Q8_0.gguf")));
        QVERIFY(copyFile(storiesPath(), folder + QStringLiteral("/split-00001-of-00002.gguf")));
        writeText(folder + QStringLiteral("/split-00002-of-00002.gguf"), QByteArray(1000, 'x'));
        writeText(folder + QStringLiteral("/broken.gguf"), "this is not a GGUF file");
        writeText(folder + QStringLiteral("/downloading.gguf.part"), "partial");
        writeText(folder + QStringLiteral("/notes.txt"), "hello");

        ModelLibrary lib(folder);
        ModelListModel model(&lib);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy changed(&lib, &ModelLibrary::modelsChanged);
        QVERIFY(rescan(lib));
        QCOMPARE(changed.size(), 1);
        QCOMPARE(lib.models().size(), 4); // split part 2, .part and .txt are not listed

        const ModelEntry* s = byFile(lib, QStringLiteral("stories260K.gguf"));
        QVERIFY(s);
        QVERIFY2(s->isUsable(), qPrintable(s->error));
        QCOMPARE(s->architecture, QStringLiteral("llama"));
        QCOMPARE(s->sizeBytes, 1185376);
        QCOMPARE(s->contextLength, 2048);
        QCOMPARE(s->layers, 5);
        QVERIFY(s->parameterCount > 200000 && s->parameterCount < 400000);
        QCOMPARE(s->quantization, QStringLiteral("F32"));
        QVERIFY(!s->hasChatTemplate);
        QVERIFY(s->memoryBytes > quint64(s->sizeBytes) / 2);
        QVERIFY(!s->external);

        const ModelEntry* nested = byFile(lib, QStringLiteral("tiny-Q8_0.gguf"));
        QVERIFY(nested && nested->isUsable());
        const ModelEntry* split = byFile(lib, QStringLiteral("split-00001-of-00002.gguf"));
        QVERIFY(split);
        QCOMPARE(split->parts, 2);
        QCOMPARE(split->sizeBytes, 1185376 + 1000);
        const ModelEntry* broken = byFile(lib, QStringLiteral("broken.gguf"));
        QVERIFY(broken);
        QVERIFY(!broken->isUsable());
        QVERIFY(!broken->error.isEmpty());
        // Shown by file name: stories260K's metadata name is only its architecture's.
        QCOMPARE(s->name.compare(s->architecture, Qt::CaseInsensitive) == 0 || s->name.isEmpty(), true);
        QCOMPARE(s->displayName(), QStringLiteral("stories260K"));
        QCOMPARE(nested->displayName(), QStringLiteral("tiny-Q8_0"));
        QCOMPARE(split->displayName(), QStringLiteral("split"));
        QCOMPARE(broken->displayName(), QStringLiteral("broken"));

        // The list model mirrors the library.
        QCOMPARE(model.rowCount(), 4);
        const int row = model.rowOf(s->path);
        QVERIFY(row >= 0);
        const QModelIndex idx = model.index(row);
        QCOMPARE(idx.data(ModelListModel::ArchitectureRole).toString(), QStringLiteral("llama"));
        QCOMPARE(idx.data(ModelListModel::QuantizationRole).toString(), QStringLiteral("F32"));
        QCOMPARE(idx.data(ModelListModel::SizeRole).toLongLong(), 1185376);
        QCOMPARE(idx.data(ModelListModel::ChatTemplateRole).toBool(), false);
        QVERIFY(idx.data(ModelListModel::ParametersTextRole).toString().endsWith(QLatin1Char('K')));
        QVERIFY(!idx.data(Qt::DisplayRole).toString().isEmpty());
        QCOMPARE(idx.data(ModelListModel::EntryRole).value<ModelEntry>(), *s);
        QVERIFY(!model.index(model.rowOf(broken->path)).data(ModelListModel::ErrorRole).toString().isEmpty());
        QVERIFY(model.roleNames().value(ModelListModel::QuantizationRole) == "quantization");

        // Nothing changed: no signal, nothing re-read.
        QVERIFY(rescan(lib));
        QCOMPARE(changed.size(), 1);

        // A file removed behind the library's back disappears on the next scan, row by row.
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        QVERIFY(QFile::remove(folder + QStringLiteral("/broken.gguf")));
        QVERIFY(rescan(lib));
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(removed.size(), 1);
        QCOMPARE(reset.size(), 0);
    }

    void importCopyReferenceAndRemove() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        const QString outside = dir.filePath(QStringLiteral("elsewhere/my-model.gguf"));
        QVERIFY(copyFile(storiesPath(), outside));
        const QString junk = dir.filePath(QStringLiteral("elsewhere/junk.gguf"));
        writeText(junk, "GGUF but not really");

        ModelLibrary lib(folder);
        ModelListModel model(&lib);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(rescan(lib));
        QCOMPARE(model.rowCount(), 0);

        QSignalSpy imported(&lib, &ModelLibrary::imported);
        QSignalSpy importFailed(&lib, &ModelLibrary::importFailed);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        quint64 t = lib.importModel(outside, ModelLibrary::ImportMode::Copy);
        QVERIFY(imported.wait(10000));
        QCOMPARE(imported.first().at(0).toULongLong(), t);
        const QString copied = imported.first().at(1).toString();
        QCOMPARE(copied, QDir(folder).filePath(QStringLiteral("my-model.gguf")));
        QCOMPARE(QFileInfo(copied).size(), 1185376);
        QVERIFY(!QFile::exists(copied + QStringLiteral(".part")));
        QTRY_COMPARE(model.rowCount(), 1);
        QCOMPARE(inserted.size(), 1);

        // The same file again is refused; so is a file that is not a model.
        t = lib.importModel(outside, ModelLibrary::ImportMode::Copy);
        QVERIFY(importFailed.wait(10000));
        QVERIFY(importFailed.last().at(1).toString().contains(QStringLiteral("already")));
        t = lib.importModel(junk, ModelLibrary::ImportMode::Reference);
        QVERIFY(importFailed.wait(10000));
        QCOMPARE(importFailed.last().at(0).toULongLong(), t);
        QVERIFY(importFailed.last().at(1).toString().contains(QStringLiteral("not a usable GGUF")));

        // A reference lists the file where it lies, and survives a restart.
        const QString outsideAbs = QFileInfo(outside).absoluteFilePath();
        t = lib.importModel(outside, ModelLibrary::ImportMode::Reference);
        QVERIFY(imported.wait(10000));
        QCOMPARE(imported.last().at(1).toString(), outsideAbs);
        QTRY_COMPARE(model.rowCount(), 2);
        const ModelEntry* ref = lib.find(outside);
        QVERIFY(ref);
        QVERIFY(ref->external);
        QVERIFY(model.index(model.rowOf(outsideAbs)).data(ModelListModel::ExternalRole).toBool());
        {
            ModelLibrary again(folder);
            QCOMPARE(again.references(), QStringList{outsideAbs});
            QVERIFY(rescan(again));
            QCOMPARE(again.models().size(), 2);
        }

        // Removing a reference keeps the file; removing a library file deletes it.
        QString error;
        QVERIFY(lib.removeModel(outside, &error));
        QTRY_COMPARE(model.rowCount(), 1);
        QVERIFY(QFile::exists(outside));
        QVERIFY(lib.references().isEmpty());
        QVERIFY(!lib.removeModel(dir.filePath(QStringLiteral("elsewhere/junk.gguf")), &error));
        QVERIFY(error.contains(QStringLiteral("not in the models folder")));
        QVERIFY(QFile::exists(junk));
        QVERIFY(lib.removeModel(copied, &error));
        QVERIFY(!QFile::exists(copied));
        QTRY_COMPARE(model.rowCount(), 0);
    }

    // What Delete does, said before it happens and done exactly: every part of a split model in
    // the folder goes; a reference elsewhere only leaves the list; a file referenced although it
    // lies in the models folder is deleted too (a scan would list it again otherwise).
    void removalDeletesWhatItSays() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QDir().mkpath(folder);
        const QString part1 = QDir(folder).filePath(QStringLiteral("big-00001-of-00002.gguf"));
        const QString part2 = QDir(folder).filePath(QStringLiteral("big-00002-of-00002.gguf"));
        writeText(part1, QByteArray(1000, 'a'));
        writeText(part2, QByteArray(2000, 'b'));
        const QString inside = QDir(folder).filePath(QStringLiteral("inside.gguf"));
        QVERIFY(copyFile(storiesPath(), inside));
        const QString outside = dir.filePath(QStringLiteral("elsewhere/outside.gguf"));
        QVERIFY(copyFile(storiesPath(), outside));

        ModelLibrary lib(folder);
        QSignalSpy imported(&lib, &ModelLibrary::imported);
        lib.importModel(outside, ModelLibrary::ImportMode::Reference);
        QVERIFY(imported.wait(10000));
        lib.importModel(inside, ModelLibrary::ImportMode::Reference); // already in the folder
        QVERIFY(imported.wait(10000));
        QVERIFY(rescan(lib));

        const ModelLibrary::Removal split = lib.removalFor(part1);
        QVERIFY(split.deletesFiles);
        QCOMPARE(split.files, (QStringList{part1, part2}));
        QCOMPARE(split.bytes, qint64(3000));
        const ModelLibrary::Removal ref = lib.removalFor(outside);
        QVERIFY(!ref.deletesFiles);
        QVERIFY(ref.files.isEmpty());
        QVERIFY(lib.removalFor(inside).deletesFiles);

        QString error;
        QVERIFY2(lib.removeModel(part1, &error), qPrintable(error));
        QVERIFY(!QFile::exists(part1) && !QFile::exists(part2));
        QVERIFY2(lib.removeModel(outside, &error), qPrintable(error));
        QVERIFY(QFile::exists(outside));
        QVERIFY2(lib.removeModel(inside, &error), qPrintable(error));
        QVERIFY(!QFile::exists(inside));
        QVERIFY(rescan(lib));
        QVERIFY(lib.models().isEmpty());
        QVERIFY(lib.references().isEmpty());
    }

    void destroyedWhileScanning() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        QTemporaryDir dir;
        for (int i = 0; i < 5; ++i)
            QVERIFY(copyFile(storiesPath(), dir.filePath(QStringLiteral("m%1.gguf").arg(i))));
        ModelLibrary lib(dir.path());
        lib.refresh();
        lib.refresh(); // folded into a rescan after the first
    } // no crash, no hang

    void starterList() {
        QString error;
        const QList<StarterModel> list = ModelLibrary::starterModels(QStringLiteral(":/hearth/models/starter.json"), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(list.size() >= 8);
        QSet<QString> repos;
        for (const StarterModel& m : list) {
            QVERIFY(!m.title.isEmpty());
            QVERIFY(!m.license.isEmpty());
            QVERIFY(!m.quantization.isEmpty());
            QVERIFY(m.approxSizeBytes > 100'000'000);
            repos.insert(m.repo);
        }
        QCOMPARE(repos.size(), list.size());
        auto find = [&](const QString& repo) {
            for (const StarterModel& m : list)
                if (m.repo == repo) return m;
            return StarterModel{};
        };
        // A pattern with a star takes every part of a split file, and only those of its quantization.
        StarterModel split;
        split.filePattern = QStringLiteral("qwen2.5-7b-instruct-q4_k_m*.gguf");
        QVERIFY(split.matches(QStringLiteral("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf")));
        QVERIFY(split.matches(QStringLiteral("Qwen2.5-7B-Instruct-Q4_K_M-00002-of-00002.gguf")));
        QVERIFY(!split.matches(QStringLiteral("qwen2.5-7b-instruct-q8_0-00001-of-00003.gguf")));
        QVERIFY(find(QStringLiteral("bartowski/Llama-3.2-1B-Instruct-GGUF")).matches(QStringLiteral("Llama-3.2-1B-Instruct-Q4_K_M.gguf")));
        QVERIFY(find(QStringLiteral("unsloth/Qwen3.5-9B-GGUF")).matches(QStringLiteral("Qwen3.5-9B-Q4_K_M.gguf")));

        // The file in the source tree is the one compiled in.
        const QString onDisk = hearth::test::sourceDir() + QStringLiteral("/resources/models/starter.json");
        if (QFile::exists(onDisk)) QCOMPARE(ModelLibrary::starterModels(onDisk).size(), list.size());
        QVERIFY(ModelLibrary::starterModels(QStringLiteral("/nonexistent.json"), &error).isEmpty());
        QVERIFY(error.contains(QStringLiteral("cannot read")));
    }

    // A projector beside its model makes it a vision model; projectors (by name or by their
    // "clip" architecture) are never listed; one of another width, or beside a model that takes
    // no images, pairs with nothing.
    void projectorsPairWithTheirModels() {
        HEARTH_REQUIRE_TEST_FILE("models/stories260K.gguf");
        HEARTH_REQUIRE_TEST_FILE("models/ggml-vocab-llama-spm.gguf");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(QDir().mkpath(folder + QStringLiteral("/seeing")));
        std::string gemma, projector;
        const QString error = hearth::test::synthGemma3WithProjector(folder + QStringLiteral("/seeing"), gemma, projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        auto info = hearth::readProjector(projector);
        QVERIFY(info.isOk());
        const int width = info->projectionDim;
        QVERIFY(copyFile(QString::fromStdString(gemma), folder + QStringLiteral("/blind/gemma3.gguf")));
        writeProjector(folder + QStringLiteral("/blind/mmproj-other.gguf"), width + 32); // wrong width
        writeProjector(folder + QStringLiteral("/blind/vision-encoder.gguf"), width); // no "mmproj" in its name
        QVERIFY(copyFile(QString::fromStdString(gemma), folder + QStringLiteral("/late.gguf")));
        QVERIFY(copyFile(storiesPath(), folder + QStringLiteral("/plain.gguf")));

        ModelLibrary lib(folder);
        ModelListModel model(&lib);
        QVERIFY(rescan(lib));
        QStringList listed;
        for (const ModelEntry& e : lib.models()) listed << QDir(folder).relativeFilePath(e.path);
        listed.sort();
        QCOMPARE(listed, (QStringList{QStringLiteral("blind/gemma3.gguf"), QStringLiteral("late.gguf"),
                                      QStringLiteral("plain.gguf"), QStringLiteral("seeing/gemma3.gguf")}));
        const ModelEntry* seeing = lib.find(QDir(folder).filePath(QStringLiteral("seeing/gemma3.gguf")));
        QVERIFY(seeing);
        QVERIFY(seeing->isVision());
        QCOMPARE(seeing->projectorPath, QString::fromStdString(projector));
        const ModelEntry* blind = lib.find(QDir(folder).filePath(QStringLiteral("blind/gemma3.gguf")));
        QVERIFY(blind);
        QVERIFY2(!blind->isVision(), qPrintable(blind->projectorPath));
        QVERIFY(!byFile(lib, QStringLiteral("late.gguf"))->isVision());
        // The list shows the tag and hands the projector to whoever loads.
        for (int row = 0; row < model.rowCount(); ++row) {
            const QModelIndex i = model.index(row, 0);
            const bool vision = i.data(ModelListModel::PathRole).toString() == seeing->path;
            QCOMPARE(i.data(Qt::DisplayRole).toString().contains(QStringLiteral("[Vision]")), vision);
            QCOMPARE(i.data(ModelListModel::ProjectorRole).toString(), vision ? seeing->projectorPath : QString());
        }

        // A projector put beside models later is found at the next scan (the models unchanged),
        // by the one that takes images only.
        QVERIFY(copyFile(QString::fromStdString(projector), folder + QStringLiteral("/mmproj-late-f16.gguf")));
        QVERIFY(rescan(lib));
        QCOMPARE(lib.models().size(), 4);
        QVERIFY(byFile(lib, QStringLiteral("late.gguf"))->isVision());
        QVERIFY(!byFile(lib, QStringLiteral("plain.gguf"))->isVision());

        // A projector is not imported as a model.
        QSignalSpy failed(&lib, &ModelLibrary::importFailed);
        lib.importModel(folder + QStringLiteral("/blind/vision-encoder.gguf"), ModelLibrary::ImportMode::Reference);
        QVERIFY(failed.wait(5000));
        QVERIFY2(failed.first().at(1).toString().contains(QStringLiteral("vision projector")),
                 qPrintable(failed.first().at(1).toString()));
    }

    // Deleting a vision model deletes its projector too, unless another model in the library
    // still pairs with it.
    void deletingAModelTakesItsOwnProjector() {
        HEARTH_REQUIRE_TEST_FILE("models/ggml-vocab-llama-spm.gguf");
        QTemporaryDir dir;
        const QString folder = dir.filePath(QStringLiteral("models"));
        QVERIFY(QDir().mkpath(folder + QStringLiteral("/seeing")));
        std::string gemma, projector;
        const QString error = hearth::test::synthGemma3WithProjector(folder + QStringLiteral("/seeing"), gemma, projector);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QString pair = folder + QStringLiteral("/pair");
        QVERIFY(copyFile(QString::fromStdString(gemma), pair + QStringLiteral("/a.gguf")));
        QVERIFY(copyFile(QString::fromStdString(gemma), pair + QStringLiteral("/b.gguf")));
        QVERIFY(copyFile(QString::fromStdString(projector), pair + QStringLiteral("/mmproj-f16.gguf")));
        ModelLibrary lib(folder);
        QVERIFY(rescan(lib));
        QCOMPARE(lib.models().size(), 3);

        const QString seeing = QString::fromStdString(gemma);
        const ModelLibrary::Removal alone = lib.removalFor(seeing);
        QCOMPARE(alone.projector, QString::fromStdString(projector));
        QCOMPARE(alone.files, (QStringList{seeing, QString::fromStdString(projector)}));
        QCOMPARE(alone.bytes, QFileInfo(seeing).size() + QFileInfo(QString::fromStdString(projector)).size());
        QString why;
        QVERIFY2(lib.removeModel(seeing, &why), qPrintable(why));
        QVERIFY(!QFile::exists(seeing));
        QVERIFY(!QFile::exists(QString::fromStdString(projector)));

        // a and b share one projector: it stays with b, then goes with it. They share a metadata
        // name too, so each is shown by its file's name, until b is left alone.
        QVERIFY(rescan(lib));
        QCOMPARE(byFile(lib, QStringLiteral("a.gguf"))->displayName(), QStringLiteral("a"));
        QCOMPARE(byFile(lib, QStringLiteral("b.gguf"))->displayName(), QStringLiteral("b"));
        const ModelLibrary::Removal first = lib.removalFor(pair + QStringLiteral("/a.gguf"));
        QVERIFY(first.projector.isEmpty());
        QCOMPARE(first.files, QStringList{pair + QStringLiteral("/a.gguf")});
        QVERIFY2(lib.removeModel(pair + QStringLiteral("/a.gguf"), &why), qPrintable(why));
        QVERIFY(QFile::exists(pair + QStringLiteral("/mmproj-f16.gguf")));
        QVERIFY(rescan(lib));
        const ModelEntry* b = byFile(lib, QStringLiteral("b.gguf"));
        QVERIFY(b && !b->name.isEmpty() && b->name != b->architecture);
        QCOMPARE(b->displayName(), b->name);
        QCOMPARE(lib.removalFor(pair + QStringLiteral("/b.gguf")).projector, pair + QStringLiteral("/mmproj-f16.gguf"));
        QVERIFY2(lib.removeModel(pair + QStringLiteral("/b.gguf"), &why), qPrintable(why));
        QVERIFY(!QFile::exists(pair + QStringLiteral("/mmproj-f16.gguf")));
        QVERIFY(rescan(lib));
        QVERIFY(lib.models().isEmpty());
    }

    void parameterText() {
        QCOMPARE(ModelLibrary::formatParameters(0), QString());
        QCOMPARE(ModelLibrary::formatParameters(260'000), QStringLiteral("260K"));
        QCOMPARE(ModelLibrary::formatParameters(1'540'000'000), QStringLiteral("1.5B"));
        QCOMPARE(ModelLibrary::formatParameters(7'000'000'000), QStringLiteral("7B"));
        QCOMPARE(ModelLibrary::formatParameters(70'600'000'000), QStringLiteral("71B"));
        QCOMPARE(ModelLibrary::formatParameters(999), QStringLiteral("999"));
    }

    // The badges a model card shows, read off real chat templates (../shared/templates), and the
    // list model's badges role.
    void templateSkillsOfRealTemplates() {
        const QString dir = QString::fromStdString(hearth::test::testDataPath("templates"));
        if (!QDir(dir).exists()) QSKIP("no templates in the test data");
        const QList<std::tuple<const char*, bool, bool>> expected{
            {"Qwen-Qwen3-0.6B", true, true},
            {"Qwen-Qwen2.5-7B-Instruct", true, false},
            {"meta-llama-Llama-3.1-8B-Instruct", true, false},
            {"meta-llama-Llama-3.2-3B-Instruct", true, false},
            {"mistralai-Mistral-Nemo-Instruct-2407", true, false},
            {"ibm-granite-granite-3.3-2B-Instruct", true, true},
            {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", false, true},
            {"HuggingFaceTB-SmolLM3-3B", false, true},
            {"google-gemma-2-2b-it", false, false},
            {"microsoft-Phi-3.5-mini-instruct", false, false},
        };
        for (const auto& [name, tools, thinking] : expected) {
            QFile f(QDir(dir).filePath(QString::fromLatin1(name) + QStringLiteral(".jinja")));
            QVERIFY2(f.open(QIODevice::ReadOnly), name);
            const TemplateSkills skills = templateSkills(f.readAll().toStdString());
            QVERIFY2(skills.tools == tools, name);
            QVERIFY2(skills.thinking == thinking, name);
        }
        QVERIFY(!templateSkills("").tools && !templateSkills("").thinking);
        // gpt-oss's harmony template: tools in a namespace, reasoning in the analysis channel.
        const TemplateSkills harmony = templateSkills("{%- if tools %}namespace functions{% endif %}<|channel|>analysis");
        QVERIFY(harmony.tools && harmony.thinking);
    }
};

QTEST_GUILESS_MAIN(TestModelLibrary)
#include "test_model_library.moc"
