// RoPE's per-dimension rotation, shared by the reference and the CPU kernels so that both rotate
// bitwise alike: the angle of pair i at position p is p · base^(-2i/nRot) (divided by a frequency
// factor when given), scaled linearly by freqScale, blended with the unscaled angle by YaRN's
// ramp when extFactor != 0, and the rotation's magnitude is attnFactor (YaRN raises it) times
// the attention temperature when set.
#pragma once

#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace hearth::cpu {

// The YaRN correction range [low, high] of dimension pairs, as floats.
inline void ropeYarnRange(const graph::RopeParams& p, double& low, double& high) {
    auto corrDim = [&](double rotations) {
        return double(p.nRot) * std::log(double(p.nCtxOrig) / (rotations * 2.0 * M_PI)) /
               (2.0 * std::log(double(p.freqBase)));
    };
    low = std::max(0.0, std::floor(corrDim(double(p.betaFast))));
    high = std::min(double(p.nRot - 1), std::ceil(corrDim(double(p.betaSlow))));
}

// The attention temperature's factor at position pos (1 when off).
inline double ropeTemperature(const graph::RopeParams& p, int64_t pos) {
    if (p.tempScale == 0.0f || p.tempLength <= 0) return 1.0;
    return 1.0 + double(p.tempScale) * std::log(std::floor(double(pos) / double(p.tempLength)) + 1.0);
}

// cs[2i], cs[2i + 1] = (cos, sin) · magnitude of pair i < nRot/2 at position pos.
inline void ropeAngles(const graph::RopeParams& p, int64_t pos, const float* freqFactors, double* cs) {
    const int64_t half = p.nRot / 2;
    double low = 0.0, high = 0.0;
    const bool yarn = p.extFactor != 0.0f && p.nCtxOrig > 0;
    if (yarn) ropeYarnRange(p, low, high);
    double magnitude = double(p.attnFactor);
    if (yarn) magnitude *= 1.0 + 0.1 * std::log(1.0 / double(p.freqScale));
    magnitude *= ropeTemperature(p, pos);
    for (int64_t i = 0; i < half; ++i) {
        double theta = double(pos) * std::pow(double(p.freqBase), -2.0 * double(i) / double(p.nRot));
        if (freqFactors) theta /= double(freqFactors[i]);
        if (p.freqScale != 1.0f || yarn) {
            const double interp = double(p.freqScale) * theta;
            if (yarn) {
                const double y = (double(i) - low) / std::max(0.001, high - low);
                const double mix = (1.0 - std::min(1.0, std::max(0.0, y))) * double(p.extFactor);
                theta = interp * (1.0 - mix) + theta * mix;
            } else {
                theta = interp;
            }
        }
        cs[2 * i] = std::cos(theta) * magnitude;
        cs[2 * i + 1] = std::sin(theta) * magnitude;
    }
}

// Rotates one head in place with angles from ropeAngles.
inline void ropeRotate(float* x, int64_t half, bool neox, const double* cs) {
    for (int64_t i = 0; i < half; ++i) {
        const double c = cs[2 * i], s = cs[2 * i + 1];
        const int64_t a = neox ? i : 2 * i;
        const int64_t b = neox ? i + half : 2 * i + 1;
        const double x0 = x[a], x1 = x[b];
        x[a] = float(x0 * c - x1 * s);
        x[b] = float(x0 * s + x1 * c);
    }
}

} // namespace hearth::cpu
