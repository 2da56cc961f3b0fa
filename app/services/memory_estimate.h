// The memory a model needs under the current load settings, split between the chosen device and
// RAM the way the engine places tensors, and the fit verdict ("fits on GPU" ... "won't fit") that
// the settings page, the library and the Discover page all show.
#pragma once

#include "services/model_library.h"
#include "services/service_types.h"

#include "hearth/devices.h"
#include "hearth/gguf.h"
#include "hearth/model_info.h"

#include <QString>

namespace hearth::app {

// The devices of this machine, looked for once per process (the first caller waits for the
// drivers; later and concurrent callers get the same list). For the pages' estimates.
DeviceList listDevicesOnce();

// What RAM the system can give now (MemAvailable), 0 when unknown.
qint64 availableRamBytes();
// All of this machine's RAM (0 when unknown).
qint64 totalRamBytes();

enum class Fit {
    Unknown,   // RAM unknown or the file unreadable
    OnGpu,     // every layer on the GPU
    GpuAndRam, // some layers (or experts) on the GPU, the rest in RAM
    InRam,     // CPU only, comfortably
    Tight,     // fits, but little RAM is left
    WontFit,   // more than the GPU or RAM can give
    WontRun,   // an architecture or weight type this build does not run
};

// "fits on GPU", "fits (GPU+RAM)", "fits in RAM", "tight", "won't fit", "won't run here".
QString fitLabel(Fit fit);

// RAM use above these fractions of what is available is tight, resp. too much.
inline constexpr double kTightRamFraction = 0.75;
inline constexpr double kMaxRamFraction = 0.9;

struct MemoryPlan {
    QString error;              // the file could not be read (the rest is then empty)
    bool approximate = false;   // from the file size only (a hub file not downloaded yet)
    ModelInfo info;             // the file's facts (empty when approximate)
    QString deviceId = QStringLiteral("cpu");
    bool gpu = false;           // a GPU was chosen and found
    bool sharesHostMemory = false; // that GPU's memory is RAM (integrated, software)
    uint32_t contextLength = 0; // per sequence, resolved like the engine (0 in the settings: min(training, 4096))
    quant::Type kvType = quant::Type::F16;
    QString kvName = QStringLiteral("f16");
    int sequences = 1;
    int blockCount = 0;
    int gpuLayers = 0;          // "as many as fit" resolved
    int cpuMoeLayers = 0;       // of those, the first N whose experts stay in RAM (resolved likewise)
    SplitEstimate split;
    uint64_t gpuBudget = 0;     // usableMemory() of the device
    qint64 ramAvailable = 0;
    bool gpuOver = false;       // the GPU's share exceeds its budget
    bool ramOver = false;       // RAM need above kMaxRamFraction of what is available
    // The vision projector of LoadSettings::projectorPath (weights and one image's encoding),
    // counted in split on the side it runs: the chosen GPU's, else RAM (computeGpu/computeCpu).
    uint64_t projectorBytes = 0;
    Fit fit = Fit::Unknown;

    // What the load takes from RAM: the CPU's share, plus the GPU's when the GPU uses RAM.
    uint64_t ramNeed() const { return split.cpuTotal() + (sharesHostMemory ? split.gpuTotal() : 0); }
    bool overLimit() const { return gpuOver || ramOver; }
};

// The plan for a model whose header is read: the engine's own split estimate, and the projector
// of settings.projectorPath where one is given (a file that does not read counts nothing).
MemoryPlan planMemory(const gguf::File& file, const ModelInfo& info, const LoadSettings& settings,
                      const DeviceList& devices, qint64 ramAvailable);
// Opens `path` (header only; every part of a split model).
MemoryPlan planMemory(const QString& path, const LoadSettings& settings, const DeviceList& devices,
                      qint64 ramAvailable);

// Before a file is downloaded: weights from its size, K/V from the parameter count (rough:
// 16 KiB per token per billion parameters at F16, what grouped-query models of 0.5-8B need at
// most), compute buffers of a typical step. `parameterCount` 0: guessed from the size (as Q4).
MemoryPlan planMemoryFromSize(qint64 fileBytes, quint64 parameterCount, qint64 trainingContext,
                              const LoadSettings& settings, const DeviceList& devices, qint64 ramAvailable);

// "fits on GPU" etc. for a plan; "won't run here: REASON" when `wontRunReason` is not empty.
QString fitBadge(const MemoryPlan& plan, const QString& wontRunReason = {});

// The load settings a starter is judged with: the defaults, on the GPU with the most usable
// memory when there is one (as many layers as fit), else the CPU.
LoadSettings defaultLoadSettingsFor(const DeviceList& devices);

// Up to `n` starters (of an architecture and weight type this build runs) that fit this machine
// by planMemoryFromSize with defaultLoadSettingsFor(devices): the largest ones that fit without
// being tight, all-on-the-GPU before split, and (for n >= 2) the smallest that fits as the quick
// choice. Fewer when fewer fit; in the starter list's order of preference described.
QList<StarterModel> recommendedStarters(const QList<StarterModel>& starters, const DeviceList& devices,
                                        qint64 ramAvailable, int n = 3);

// "0.5B" -> 500000000, "1.5B", "260K", "7M"; 0 when not a count.
quint64 parseParameterCount(const QString& text);

} // namespace hearth::app
