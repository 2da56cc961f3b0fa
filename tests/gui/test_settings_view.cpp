// The settings page's device picker and GPU layer split, offscreen: with a (described) GPU of a
// given size, "as many as fit" picks the layer count the engine's accounting allows, a manual
// count beyond the device's memory turns the estimate red, the CPU runs everything, and the
// choices are saved. A hybrid model (qwen35) shows its recurrent state beside the KV cache. Chat
// sampling, idle unload and theme survive a restart; a KV type the chosen GPU refuses is greyed
// with the reason and, when chosen anyway, a warning says the load will run on the CPU and why.
// A mixture of experts that does not fit keeps its experts of some layers in RAM.
#include "settings_view.h"
#include "test_support.h"

#include "hearth/gguf.h"
#include "hearth/model_info.h"
#include "hearth/synth.h"
#include "services/engine_host.h"
#include "services/load_fallback.h"
#include "services/settings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSignalSpy>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

using namespace hearth;

namespace {

// The device list of a machine with a CPU and one discrete Vulkan GPU with `freeBytes` free.
DeviceList cpuAndGpu(uint64_t freeBytes, uint64_t totalBytes) {
    DeviceList list;
    DeviceDescription cpu;
    cpu.id = "cpu";
    cpu.name = "Test CPU";
    cpu.totalMemory = uint64_t(8) << 30;
    DeviceDescription gpu;
    gpu.kind = DeviceKind::Vulkan;
    gpu.id = "vulkan:0";
    gpu.name = "Test GPU";
    gpu.type = "discrete";
    gpu.freeMemory = freeBytes;
    gpu.totalMemory = totalBytes;
    list.devices = {cpu, gpu};
    return list;
}

// A tiny model of `preset` with stories260K's vocabulary, written into `dir`; empty on failure.
std::string synthTiny(const QTemporaryDir& dir, const char* preset, const char* type) {
    SynthOptions o;
    o.preset = preset;
    o.typeOrMix = type;
    o.vocabPath = test::testDataPath("models/stories260K.gguf");
    o.outPath = dir.filePath(QString::fromLatin1(preset) + QStringLiteral(".gguf")).toStdString();
    return synthesizeModel(o).isOk() ? o.outPath : std::string();
}

} // namespace

class TestSettingsView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void gpuLayersFollowTheDevice() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        const std::string model = test::testDataPath("models/stories260K.gguf");
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        view.show();
        view.setModelPath(QString::fromStdString(model));

        // What the engine's accounting says layers need (context 2048 default up to 4096, F16
        // KV, 4 sequences as the settings default).
        auto file = gguf::File::open(model);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const uint32_t ctx = std::min<uint32_t>(info->contextLength, 4096);
        const int seqs = settings.loadSettings().maxParallel;
        const uint64_t three = estimateSplit(*file, *info, 3, ctx, quant::Type::F16, seqs).gpuTotal();
        const uint64_t four = estimateSplit(*file, *info, 4, ctx, quant::Type::F16, seqs).gpuTotal();
        QVERIFY(three < four);

        // A device whose usable memory (free less a tenth) lies between what 3 and 4 layers need.
        const uint64_t usable = (three + four) / 2;
        DeviceList list = cpuAndGpu(usable * 10 / 9 + 1, (usable * 10 / 9 + 1) * 2);
        list.notes = {"CUDA: no NVIDIA driver"};
        view.setDevices(list);

        view.selectDevice(QStringLiteral("vulkan:0"));
        view.setGpuLayers(-1);
        QCOMPARE(view.effectiveGpuLayers(), 3);
        QVERIFY(!view.estimateOverLimit());
        QVERIFY2(view.estimateText().contains(QStringLiteral("on vulkan:0")), qPrintable(view.estimateText()));
        QCOMPARE(settings.loadSettings().device, QStringLiteral("vulkan:0"));
        QCOMPARE(settings.loadSettings().gpuLayers, -1);

        view.setGpuLayers(5); // all of them: more than the device holds
        QCOMPARE(view.effectiveGpuLayers(), 5);
        QVERIFY(view.estimateOverLimit());
        QCOMPARE(settings.loadSettings().gpuLayers, 5);

        view.setGpuLayers(2);
        QVERIFY(!view.estimateOverLimit());

        view.selectDevice(QStringLiteral("cpu"));
        QCOMPARE(view.effectiveGpuLayers(), 0);
        QVERIFY(!view.estimateText().contains(QStringLiteral("on vulkan:0")));
        QCOMPARE(settings.loadSettings().device, QStringLiteral("cpu"));

        // Memory map and batch size are saved as they change, and the estimate says which.
        auto* mmap = view.findChild<QCheckBox*>(QStringLiteral("useMmap"));
        auto* batch = view.findChild<QSpinBox*>(QStringLiteral("batchSize"));
        QVERIFY(mmap && batch && mmap->isChecked());
        QVERIFY(view.estimateText().contains(QStringLiteral("memory-mapped")));
        mmap->setChecked(false);
        batch->setValue(256);
        QVERIFY2(view.estimateText().contains(QStringLiteral("weights (read into memory)")),
                 qPrintable(view.estimateText()));
        QCOMPARE(settings.loadSettings().useMmap, false);
        QCOMPARE(settings.loadSettings().batchSize, 256);
        // Speculative decoding: on by default, saved as it changes.
        auto* spec = view.findChild<QCheckBox*>(QStringLiteral("speculation"));
        QVERIFY(spec && spec->isChecked());
        QVERIFY(settings.loadSettings().speculation);
        spec->setChecked(false);
        QCOMPARE(settings.loadSettings().speculation, false);
    }

    // The draft-model picker: the page asks for its model's drafts, lists the answer (a late one for
    // another model is ignored), and keeps the choice per model.
    void draftModelPickerListsWhatTheFinderFound() {
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        auto* picker = view.findChild<QComboBox*>(QStringLiteral("draftModel"));
        QVERIFY(picker);
        QVERIFY(!picker->isEnabled());
        QSignalSpy wanted(&view, &ui::SettingsView::draftCandidatesWanted);
        const QString big = dir.filePath(QStringLiteral("big.gguf")), other = dir.filePath(QStringLiteral("other.gguf"));
        const QString small = dir.filePath(QStringLiteral("small.gguf")), tiny = dir.filePath(QStringLiteral("tiny.gguf"));
        view.setModelPath(big);
        QCOMPARE(wanted.count(), 1);
        QCOMPARE(wanted.first().first().toString(), big);
        view.setModelPath(big); // the same model: no second request
        QCOMPARE(wanted.count(), 1);

        view.setDraftModels(other, {tiny}); // not the page's model
        QCOMPARE(picker->count(), 1);
        view.setDraftModels(big, {small, tiny});
        QCOMPARE(picker->count(), 3);
        QVERIFY(picker->isEnabled());
        QCOMPARE(picker->itemText(1), QStringLiteral("small.gguf"));
        QCOMPARE(picker->currentIndex(), 0);
        picker->setCurrentIndex(2);
        Q_EMIT picker->activated(2);
        QCOMPARE(settings.draftModelFor(big), tiny);

        // Another model has its own choice; coming back shows the first one's again.
        view.setModelPath(other);
        QCOMPARE(picker->count(), 1);
        view.setDraftModels(other, {});
        QVERIFY(!picker->isEnabled());
        view.setModelPath(big);
        view.setDraftModels(big, {small, tiny});
        QCOMPARE(picker->currentData().toString(), tiny);
        // A saved choice no longer found shows "None" and stays saved until another is picked.
        view.setModelPath(other);
        view.setModelPath(big);
        view.setDraftModels(big, {small});
        QCOMPARE(picker->currentIndex(), 0);
        QCOMPARE(settings.draftModelFor(big), tiny);
        // The model itself among them: its own multi-token-prediction head, named so.
        view.setDraftModels(big, {big, small});
        QCOMPARE(picker->itemText(1), QStringLiteral("Multi-token prediction (built into this model)"));
        QCOMPARE(picker->itemText(2), QStringLiteral("small.gguf"));
    }

    // A mixture of experts too big for the GPU: "as many as fit" keeps its 4 layers there with the
    // experts of the first 2 in RAM, which the estimate shows; none in RAM by hand gives up layers;
    // a dense model has no experts to move (the control is off).
    void moeExpertsInRamFollowTheFit() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const std::string model = synthTiny(dir, "qwen3moe-tiny", "Q8_0");
        QVERIFY(!model.empty());
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        view.show();
        auto file = gguf::File::open(model);
        QVERIFY(file.isOk());
        auto info = readModelInfo(*file);
        QVERIFY(info.isOk());
        const uint32_t ctx = std::min<uint32_t>(info->contextLength, 4096);
        const int seqs = settings.loadSettings().maxParallel;
        auto gpuBytes = [&](int moe) { return estimateSplit(*file, *info, 4, ctx, quant::Type::F16, seqs, 512, moe).gpuTotal(); };
        const uint64_t free = (gpuBytes(1) + gpuBytes(2)) / 2 * 10 / 9 + 1;
        view.setDevices(cpuAndGpu(free, free));
        view.selectDevice(QStringLiteral("vulkan:0"));
        view.setGpuLayers(-1);
        view.setModelPath(QString::fromStdString(model));
        auto* experts = view.findChild<QSpinBox*>(QStringLiteral("cpuMoeLayers"));
        QVERIFY(experts);
        QVERIFY(experts->isEnabled());
        QCOMPARE(experts->value(), -1); // automatic
        QCOMPARE(view.effectiveGpuLayers(), 4);
        QCOMPARE(view.effectiveCpuMoeLayers(), 2);
        QVERIFY(!view.estimateOverLimit());
        QVERIFY2(view.estimateText().contains(QStringLiteral("experts of 2 layers")), qPrintable(view.estimateText()));
        QCOMPARE(view.fitText(), QStringLiteral("fits (GPU+RAM)"));

        view.setCpuMoeLayers(0);
        QCOMPARE(settings.loadSettings().cpuMoeLayers, 0);
        QCOMPARE(view.effectiveCpuMoeLayers(), 0);
        QVERIFY(view.effectiveGpuLayers() < 4);
        QVERIFY(!view.estimateText().contains(QStringLiteral("experts of")));

        view.setCpuMoeLayers(4);
        view.setGpuLayers(4);
        QCOMPARE(view.effectiveCpuMoeLayers(), 4);
        QCOMPARE(settings.loadSettings().cpuMoeLayers, 4);

        view.setModelPath(QString::fromStdString(test::testDataPath("models/stories260K.gguf")));
        QVERIFY(!experts->isEnabled());
        QCOMPARE(view.effectiveCpuMoeLayers(), 0);
    }

    void hybridModelShowsItsState() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        const std::string model = synthTiny(dir, "qwen35-tiny", "F32");
        QVERIFY(!model.empty());
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        view.show();
        view.setModelPath(QString::fromStdString(model));
        view.selectDevice(QStringLiteral("cpu"));
        const QString text = view.estimateText();
        for (const QString& fact : {QStringLiteral("f16 in 1 of 5 layers"), QStringLiteral("recurrent state: "),
                                    QStringLiteral("per sequence (3 layers)"), QStringLiteral("KV cache")})
            QVERIFY2(text.contains(fact), qPrintable(fact + QStringLiteral(" not in: ") + text));
        qInfo("%s", qPrintable(text));
    }

    // Before: the page started from built-in defaults and never saved, so a restart lost them.
    void samplingAndAppSettingsSurviveARestart() {
        QTemporaryDir dir;
        const QString ini = dir.filePath(QStringLiteral("hearth.ini"));
        {
            app::Settings settings(ini);
            app::EngineHost engine;
            ui::SettingsView view(&settings, &engine);
            QSignalSpy sampling(&view, &ui::SettingsView::samplingChanged);
            QSignalSpy theme(&view, &ui::SettingsView::themeChanged);
            QSignalSpy idle(&view, &ui::SettingsView::idleUnloadMinutesChanged);
            view.findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->setValue(0.3);
            view.findChild<QDoubleSpinBox*>(QStringLiteral("topP"))->setValue(0.7);
            view.findChild<QSpinBox*>(QStringLiteral("topK"))->setValue(12);
            view.findChild<QDoubleSpinBox*>(QStringLiteral("minP"))->setValue(0.1);
            view.findChild<QDoubleSpinBox*>(QStringLiteral("repetitionPenalty"))->setValue(1.1);
            view.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->setValue(77);
            auto* themes = view.findChild<QComboBox*>(QStringLiteral("theme"));
            themes->setCurrentIndex(themes->findData(QStringLiteral("dark")));
            view.findChild<QSpinBox*>(QStringLiteral("idleUnloadMinutes"))->setValue(15);
            view.findChild<QPlainTextEdit*>(QStringLiteral("systemPrompt"))->setPlainText(QStringLiteral("Be brief."));
            QVERIFY(!sampling.isEmpty());
            QCOMPARE(sampling.last().at(0).value<app::Sampling>().maxTokens, 77);
            QCOMPARE(theme.last().at(0).toString(), QStringLiteral("dark"));
            QCOMPARE(idle.last().at(0).toInt(), 15);
        }
        app::Settings settings(ini);
        const app::Sampling s = settings.chatSampling();
        QCOMPARE(s.temperature, 0.3f);
        QCOMPARE(s.topP, 0.7f);
        QCOMPARE(s.topK, 12);
        QCOMPARE(s.minP, 0.1f);
        QCOMPARE(s.repetitionPenalty, 1.1f);
        QCOMPARE(s.maxTokens, 77);
        QCOMPARE(settings.theme(), QStringLiteral("dark"));
        QCOMPARE(settings.idleUnloadMinutes(), 15);
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        QCOMPARE(view.findChild<QDoubleSpinBox*>(QStringLiteral("temperature"))->value(), 0.3);
        QCOMPARE(view.findChild<QSpinBox*>(QStringLiteral("maxTokens"))->value(), 77);
        QCOMPARE(view.findChild<QComboBox*>(QStringLiteral("theme"))->currentData().toString(), QStringLiteral("dark"));
        QCOMPARE(view.findChild<QSpinBox*>(QStringLiteral("idleUnloadMinutes"))->value(), 15);
        QCOMPARE(view.findChild<QPlainTextEdit*>(QStringLiteral("systemPrompt"))->toPlainText(), QStringLiteral("Be brief."));
        QCOMPARE(view.sampling().maxTokens, 77);
    }

    // Before: Q8_0 K/V with a GPU that could not keep it for this model was offered and silently
    // ran on the CPU.
    void saysBeforeLoadingWhatFallsBack() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        QTemporaryDir dir;
        app::Settings settings(dir.filePath(QStringLiteral("hearth.ini")));
        app::EngineHost engine;
        ui::SettingsView view(&settings, &engine);
        view.show();
        view.setModelPath(QString::fromStdString(test::testDataPath("models/stories260K.gguf")));
        DeviceList list;
        DeviceDescription cpu;
        cpu.id = "cpu";
        cpu.name = "Test CPU";
        DeviceDescription gpu;
        gpu.kind = DeviceKind::Vulkan;
        gpu.id = "vulkan:0";
        gpu.name = "Test GPU";
        gpu.freeMemory = gpu.totalMemory = uint64_t(4) << 30;
        DeviceDescription cuda = gpu;
        cuda.kind = DeviceKind::Cuda;
        cuda.id = "cuda:0";
        cuda.name = "Test CUDA GPU";
        list.devices = {cpu, gpu, cuda};
        view.setDevices(list);
        auto* kv = view.findChild<QComboBox*>();
        for (QComboBox* c : view.findChildren<QComboBox*>())
            if (c->findData(QStringLiteral("q8_0")) >= 0) kv = c;
        auto* model = qobject_cast<QStandardItemModel*>(kv->model());
        QVERIFY(model);
        const int q8 = kv->findData(QStringLiteral("q8_0"));
        auto* warning = view.findChild<QLabel*>(QStringLiteral("fallbackWarning"));
        QVERIFY(warning);

        view.selectDevice(QStringLiteral("cpu"));
        QVERIFY(model->item(q8)->isEnabled());
        kv->setCurrentIndex(q8);
        QVERIFY(view.fallbackWarning().isEmpty());
        QVERIFY(!warning->isVisible());

        // Vulkan keeps a Q8_0 cache: nothing to say.
        view.selectDevice(QStringLiteral("vulkan:0"));
        QVERIFY(model->item(q8)->isEnabled());
        QVERIFY(view.fallbackWarning().isEmpty());
        QVERIFY(!warning->isVisible());

        // CUDA keeps Q8_0 for heads of whole 32-value blocks; stories260K's are 8 values, so the
        // page says that its cache and attention would run on the CPU.
        view.selectDevice(QStringLiteral("cuda:0"));
        QVERIFY(model->item(q8)->isEnabled());
        QVERIFY(model->item(kv->findData(QStringLiteral("f16")))->isEnabled());
        QVERIFY2(view.fallbackWarning().startsWith(QStringLiteral("Will run on the CPU because")) &&
                     view.fallbackWarning().contains(QStringLiteral("Q8_0")),
                 qPrintable(view.fallbackWarning()));
        QVERIFY(warning->isVisible());
        QCOMPARE(view.fallbackWarning(),
                 QStringLiteral("Will run on the CPU because %1.")
                     .arg(app::fallbackReasonFor(settings.loadSettings(), list,
                                                 QString::fromStdString(test::testDataPath("models/stories260K.gguf")))));

        kv->setCurrentIndex(kv->findData(QStringLiteral("f16")));
        QVERIFY(view.fallbackWarning().isEmpty());
        QVERIFY(!warning->isVisible());
    }
};

QTEST_MAIN(TestSettingsView)
#include "test_settings_view.moc"
