// The device self-test: runs every op of the graph set (every weight type, K/V type, RoPE and
// attention variant, odd shapes) as small graphs on a device and on the scalar reference, and
// reports per case how far the device's results are from the reference's. `hearth-cli selftest`
// prints it; the model runner runs the quick subset before it trusts a GPU.
#pragma once

#include "backend/device.h"
#include "hearth/selftest.h"
#include "hearth/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hearth::backend {

using hearth::SelftestCase;
using hearth::SelftestOptions;
using hearth::SelftestReport;

// Runs the cases on `device` and on a fresh reference device ("ref") and compares them. A case the
// device refuses (supportsOp, or an Unsupported status from loadWeights, createKvPool or
// compile) is reported unsupported, not failed; any other error is a failure of that case. Errors
// only when the cases cannot be built (a bug). Every weight gets its own index within one run,
// so the device may keep them by index; it is meant to be thrown away afterwards rather than
// used for a model (its weight caches then hold the test's weights).
Result<SelftestReport> runSelftest(Device& device, const SelftestOptions& options);

} // namespace hearth::backend
