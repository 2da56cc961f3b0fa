// planMemory: the engine's split estimate (hearth/model_info.h) for the load settings and device,
// resolved the way EngineHost places layers, and one rule turning it into a fit verdict.
#include "services/memory_estimate.h"

#include "hearth/projector.h"

#include "services/model_support.h"

#include <QFile>
#include <QObject>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace hearth::app {

DeviceList listDevicesOnce() {
    static const DeviceList devices = listDevices(); // initialised once, thread-safe
    return devices;
}

namespace {

// A /proc/meminfo field in bytes ("MemAvailable"), 0 when it cannot be read.
qint64 meminfoBytes(const QByteArray& field) {
    QFile f(QStringLiteral("/proc/meminfo"));
    if (!f.open(QIODevice::ReadOnly)) return 0;
    const QByteArray key = field + ':';
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith(key)) return line.mid(key.size()).trimmed().split(' ').value(0).toLongLong() * 1024;
    return 0;
}

} // namespace

qint64 availableRamBytes() { return meminfoBytes("MemAvailable"); }
qint64 totalRamBytes() { return meminfoBytes("MemTotal"); }

QString fitLabel(Fit fit) {
    switch (fit) {
    case Fit::Unknown: return QObject::tr("unknown fit");
    case Fit::OnGpu: return QObject::tr("fits on GPU");
    case Fit::GpuAndRam: return QObject::tr("fits (GPU+RAM)");
    case Fit::InRam: return QObject::tr("fits in RAM");
    case Fit::Tight: return QObject::tr("tight");
    case Fit::WontFit: return QObject::tr("won't fit");
    case Fit::WontRun: return QObject::tr("won't run here");
    }
    return {};
}

namespace {

quant::Type kvTypeOf(const QString& name) {
    if (name == QStringLiteral("q8_0")) return quant::Type::Q8_0;
    if (name == QStringLiteral("f32")) return quant::Type::F32;
    return quant::Type::F16;
}

// The context and device parts every plan shares.
MemoryPlan basePlan(const LoadSettings& settings, const DeviceList& devices, qint64 ramAvailable,
                    uint32_t trainingContext) {
    MemoryPlan p;
    const uint32_t train = trainingContext > 0 ? trainingContext : 4096;
    p.contextLength = settings.contextLength > 0 ? uint32_t(settings.contextLength) : std::min<uint32_t>(train, 4096);
    p.kvType = kvTypeOf(settings.kvType);
    p.kvName = p.kvType == quant::Type::Q8_0 ? QStringLiteral("q8_0")
               : p.kvType == quant::Type::F32 ? QStringLiteral("f32") : QStringLiteral("f16");
    p.sequences = std::max(1, settings.maxParallel);
    p.ramAvailable = ramAvailable;
    const DeviceDescription* d = findDevice(devices, settings.device.toStdString());
    if (d && d->kind != DeviceKind::Cpu && settings.gpuLayers != 0) {
        p.gpu = true;
        p.deviceId = QString::fromStdString(d->id);
        p.sharesHostMemory = d->sharesHostMemory;
        p.gpuBudget = usableMemory(*d);
    }
    return p;
}

// The verdict: over a limit first, then tight RAM, then where the layers are.
void classify(MemoryPlan& p) {
    p.gpuOver = p.gpu && p.split.gpuTotal() > p.gpuBudget;
    const double ram = double(p.ramAvailable);
    p.ramOver = ram > 0 && double(p.ramNeed()) > kMaxRamFraction * ram;
    if (p.overLimit()) p.fit = Fit::WontFit;
    else if (ram <= 0) p.fit = Fit::Unknown;
    else if (double(p.ramNeed()) > kTightRamFraction * ram) p.fit = Fit::Tight;
    else if (p.gpu && p.gpuLayers >= p.blockCount && p.blockCount > 0 && p.cpuMoeLayers == 0) p.fit = Fit::OnGpu;
    else if (p.gpu && p.gpuLayers > 0) p.fit = Fit::GpuAndRam;
    else p.fit = Fit::InRam;
}

} // namespace

MemoryPlan planMemory(const gguf::File& file, const ModelInfo& info, const LoadSettings& settings,
                      const DeviceList& devices, qint64 ramAvailable) {
    MemoryPlan p = basePlan(settings, devices, ramAvailable, info.contextLength);
    p.info = info;
    p.blockCount = int(info.blockCount);
    if (!settings.projectorPath.isEmpty())
        if (Result<ProjectorInfo> projector = readProjector(settings.projectorPath.toStdString()))
            p.projectorBytes = projectorMemoryBytes(*projector);
    const int batch = std::max(16, settings.batchSize);
    if (p.gpu) {
        if (settings.gpuLayers < 0) {
            // The projector runs on the GPU beside the layers: what is left for them.
            const uint64_t budget = p.gpuBudget - std::min(p.gpuBudget, p.projectorBytes);
            const GpuFit fit = fitOnGpu(file, info, budget, p.contextLength, p.kvType, p.sequences, batch,
                                        settings.cpuMoeLayers < 0 ? kFitExperts : settings.cpuMoeLayers);
            p.gpuLayers = fit.gpuLayers;
            p.cpuMoeLayers = fit.cpuMoeLayers;
        } else {
            p.gpuLayers = std::min(settings.gpuLayers, p.blockCount);
            p.cpuMoeLayers = std::max(0, settings.cpuMoeLayers);
        }
    }
    p.split = estimateSplit(file, info, p.gpuLayers, p.contextLength, p.kvType, p.sequences, batch, p.cpuMoeLayers);
    p.cpuMoeLayers = p.split.cpuMoeLayers;
    (p.gpu ? p.split.computeGpu : p.split.computeCpu) += p.projectorBytes;
    classify(p);
    return p;
}

MemoryPlan planMemory(const QString& path, const LoadSettings& settings, const DeviceList& devices,
                      qint64 ramAvailable) {
    gguf::ReadOptions options;
    options.requireTensorData = false;
    auto file = gguf::File::open(path.toStdString(), options);
    MemoryPlan failed;
    if (!file) {
        failed.error = QString::fromStdString(file.status().message());
        return failed;
    }
    auto info = readModelInfo(*file);
    if (!info) {
        failed.error = QString::fromStdString(info.status().message());
        return failed;
    }
    return planMemory(*file, *info, settings, devices, ramAvailable);
}

MemoryPlan planMemoryFromSize(qint64 fileBytes, quint64 parameterCount, qint64 trainingContext,
                              const LoadSettings& settings, const DeviceList& devices, qint64 ramAvailable) {
    MemoryPlan p = basePlan(settings, devices, ramAvailable, uint32_t(std::clamp<qint64>(trainingContext, 0, 1 << 24)));
    p.approximate = true;
    const uint64_t weights = uint64_t(std::max<qint64>(0, fileBytes));
    // About 4.5 bits per weight when the hub does not say: a Q4_K_M file.
    const double params = parameterCount > 0 ? double(parameterCount) : double(weights) * 8.0 / 4.5;
    const double kvScale = p.kvType == quant::Type::F32 ? 2.0 : p.kvType == quant::Type::Q8_0 ? 34.0 / 64.0 : 1.0;
    const double perToken = std::max(4096.0, 16384.0 * params / 1e9) * kvScale;
    const uint64_t kv = uint64_t(perToken * double(p.contextLength) * double(p.sequences));
    const uint64_t compute = uint64_t(std::max(64.0, 256.0 * std::sqrt(std::max(params, 1.0) / 1e9))) << 20;
    // Layers: typical depth for the size; weights and K/V spread evenly over them.
    p.blockCount = params < 1e9 ? 24 : params < 4e9 ? 28 : params < 10e9 ? 32 : params < 40e9 ? 48 : 80;
    const double perLayer = double(weights + kv) / double(p.blockCount);
    if (p.gpu) {
        if (settings.gpuLayers >= 0) p.gpuLayers = std::min(settings.gpuLayers, p.blockCount);
        else {
            const double room = double(p.gpuBudget) - double(compute);
            p.gpuLayers = room <= 0 ? 0 : std::min(p.blockCount, int(room / std::max(perLayer, 1.0)));
        }
    }
    const double share = double(p.gpuLayers) / double(p.blockCount);
    p.split.gpuLayers = p.gpuLayers;
    p.split.weightsGpu = uint64_t(double(weights) * share);
    p.split.weightsCpu = weights - p.split.weightsGpu;
    p.split.kvGpu = uint64_t(double(kv) * share);
    p.split.kvCpu = kv - p.split.kvGpu;
    p.split.computeGpu = p.gpuLayers > 0 ? compute : 0;
    p.split.computeCpu = compute;
    classify(p);
    return p;
}

QString fitBadge(const MemoryPlan& plan, const QString& wontRunReason) {
    if (!wontRunReason.isEmpty()) return QObject::tr("won't run here: %1").arg(wontRunReason);
    if (!plan.error.isEmpty()) return fitLabel(Fit::Unknown);
    return fitLabel(plan.fit);
}

LoadSettings defaultLoadSettingsFor(const DeviceList& devices) {
    LoadSettings ls;
    ls.device = QStringLiteral("cpu");
    uint64_t best = 0;
    for (const DeviceDescription& d : devices.devices)
        if (d.kind != DeviceKind::Cpu && usableMemory(d) > best) {
            best = usableMemory(d);
            ls.device = QString::fromStdString(d.id);
        }
    ls.gpuLayers = -1;
    return ls;
}

QList<StarterModel> recommendedStarters(const QList<StarterModel>& starters, const DeviceList& devices,
                                        qint64 ramAvailable, int n) {
    const LoadSettings ls = defaultLoadSettingsFor(devices);
    struct Candidate {
        int order;
        qint64 size;
        bool split; // part of it in RAM
    };
    QList<Candidate> fitting;
    for (int i = 0; i < starters.size(); ++i) {
        const StarterModel& s = starters[i];
        if (!wontRunReason(s.quantization, s.architecture).isEmpty() || s.approxSizeBytes <= 0) continue;
        const MemoryPlan p = planMemoryFromSize(s.approxSizeBytes, parseParameterCount(s.parameters), 0, ls, devices,
                                                ramAvailable);
        if (p.fit == Fit::OnGpu || p.fit == Fit::InRam || p.fit == Fit::GpuAndRam)
            fitting.append({i, s.approxSizeBytes, p.fit == Fit::GpuAndRam});
    }
    QList<StarterModel> out;
    if (fitting.isEmpty() || n <= 0) return out;
    QList<Candidate> ranked = fitting;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
        if (a.split != b.split) return !a.split;
        return a.size > b.size;
    });
    const Candidate smallest = *std::min_element(fitting.begin(), fitting.end(),
                                                 [](const Candidate& a, const Candidate& b) { return a.size < b.size; });
    QList<int> picked;
    for (const Candidate& c : ranked) {
        if (int(picked.size()) >= (n >= 2 ? n - 1 : n)) break;
        picked << c.order;
    }
    if (n >= 2 && !picked.contains(smallest.order)) picked << smallest.order;
    for (const Candidate& c : ranked) { // fewer picked when the smallest was among the first
        if (int(picked.size()) >= n) break;
        if (!picked.contains(c.order)) picked << c.order;
    }
    for (int i : picked) out << starters[i];
    return out;
}

quint64 parseParameterCount(const QString& text) {
    static const QRegularExpression re(QStringLiteral("^\\s*([0-9]+(?:\\.[0-9]+)?)\\s*([KMBT])\\s*$"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(text);
    if (!m.hasMatch()) return 0;
    const double v = m.captured(1).toDouble();
    const QChar unit = m.captured(2).toUpper().at(0);
    const double scale = unit == QLatin1Char('K') ? 1e3 : unit == QLatin1Char('M') ? 1e6 : unit == QLatin1Char('B') ? 1e9 : 1e12;
    return quint64(std::llround(v * scale));
}

} // namespace hearth::app
