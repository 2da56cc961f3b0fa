// The vectorized CPU activations and RMSNorm against the scalar reference: random inputs of odd
// lengths, values out to where exp over- and underflows, and the output written over the input.
#include "backend/cpu/activations.h"
#include "backend/cpu/fast_math.h"
#include "backend/cpu/ref_ops.h"

#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

using namespace hearth;

namespace {

// |a - b| within rel of |b|, or within abs near zero.
bool within(float a, float b, float rel, float abs) {
    return std::isfinite(a) && std::fabs(a - b) <= std::max(abs, rel * std::fabs(b));
}

} // namespace

class TestCpuActivations : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void expMatchesLibrary() {
        float worst = 0.0f;
        for (float x = -87.0f; x <= 87.0f; x += 0.0137f) {
            const float want = std::exp(x), got = cpu::expClamped(x);
            worst = std::max(worst, std::fabs(got - want) / want);
        }
        QVERIFY2(worst < 5e-7f, qPrintable(QString("worst relative error %1").arg(worst)));
        QCOMPARE(cpu::expClamped(-1000.0f), cpu::expClamped(-87.0f));
        QVERIFY(std::isfinite(cpu::expClamped(1000.0f)));
        QCOMPARE(cpu::expClamped(0.0f), 1.0f);
    }

    void swigluMatchesReference() {
        std::mt19937 rng(7);
        std::normal_distribution<float> dist(0.0f, 3.0f);
        for (int64_t n : {1, 3, 15, 16, 17, 63, 257, 1000, 8192 + 5}) {
            std::vector<float> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n));
            for (auto& g : gate) g = dist(rng);
            for (auto& u : up) u = dist(rng);
            if (n >= 8) { // where exp(-g) over- and underflows
                gate[0] = -200.0f;
                gate[1] = 200.0f;
                gate[2] = -88.5f;
                gate[3] = 88.5f;
                gate[4] = 0.0f;
                gate[5] = -1e-30f;
            }
            std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
            cpu::ref::swiglu(gate.data(), up.data(), want.data(), n);
            cpu::swiglu(gate.data(), up.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i)
                QVERIFY2(within(got[size_t(i)], want[size_t(i)], 2e-6f, 1e-30f),
                         qPrintable(QString("n=%1 i=%2 gate=%3: %4 vs %5").arg(n).arg(i)
                                        .arg(gate[size_t(i)]).arg(got[size_t(i)]).arg(want[size_t(i)])));
            // In place over the gate gives the same values.
            std::vector<float> inPlace = gate;
            cpu::swiglu(inPlace.data(), up.data(), inPlace.data(), n);
            QCOMPARE(inPlace, got);
        }
    }

    void rmsNormMatchesReference() {
        std::mt19937 rng(8);
        std::normal_distribution<float> dist(0.0f, 2.0f);
        for (int64_t n : {1, 7, 8, 9, 64, 100, 2048, 4099}) {
            std::vector<float> x(static_cast<size_t>(n)), w(static_cast<size_t>(n));
            for (auto& v : x) v = dist(rng);
            for (auto& v : w) v = dist(rng);
            std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
            cpu::ref::rmsNorm(x.data(), w.data(), want.data(), n, 1e-5f);
            cpu::rmsNorm(x.data(), w.data(), got.data(), n, 1e-5f);
            for (int64_t i = 0; i < n; ++i)
                QVERIFY2(within(got[size_t(i)], want[size_t(i)], 1e-6f, 1e-30f),
                         qPrintable(QString("n=%1 i=%2: %3 vs %4").arg(n).arg(i)
                                        .arg(got[size_t(i)]).arg(want[size_t(i)])));
            std::vector<float> inPlace = x; // out over x gives the same values
            cpu::rmsNorm(inPlace.data(), w.data(), inPlace.data(), n, 1e-5f);
            QCOMPARE(inPlace, got);
        }
        // All zeros: the scale is 1/sqrt(eps), finite.
        std::vector<float> zeros(33, 0.0f), ones(33, 1.0f), out(33, -1.0f);
        cpu::rmsNorm(zeros.data(), ones.data(), out.data(), 33, 1e-5f);
        for (float v : out) QCOMPARE(v, 0.0f);
    }
};

QTEST_APPLESS_MAIN(TestCpuActivations)
#include "test_cpu_activations.moc"
