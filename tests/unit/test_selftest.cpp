// The device self-test (backend/selftest.h, hearth-cli selftest): the CPU device agrees with the
// reference on every case; a device that corrupts one op is caught on exactly that op, and the
// model runner then leaves the GPU out; the command's JSON and exit codes.
#include "backend/cpu/cpu_device.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/thread_pool.h"
#include "backend/selftest.h"
#include "hearth/gguf.h"
#include "model/arch.h"
#include "runtime/model_runner.h"
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QProcess>
#include <QtTest>

#include <cstring>
#include <map>
#include <set>

using namespace hearth;

namespace {

// Runs the CPU's programs, then adds `delta` to every output of nodes of one op (or, `state`,
// to the State pool the node advanced): a device that is wrong on that op only.
class CorruptingProgram final : public backend::Program {
public:
    CorruptingProgram(std::unique_ptr<backend::Program> inner, backend::ProgramSpec spec, graph::Op op, float delta,
                      bool state)
        : m_inner(std::move(inner)), m_spec(std::move(spec)), m_op(op), m_delta(delta), m_state(state) {}
    Status run() override {
        HEARTH_RETURN_IF_ERROR(m_inner->run());
        const graph::Graph& g = *m_spec.graph;
        for (int index : m_spec.nodes) {
            const graph::Node& n = g.nodes()[size_t(index)];
            if (n.op != m_op) continue;
            graph::TensorId target = n.out;
            if (m_state)
                for (graph::TensorId s : n.src)
                    if (s != graph::kNone && g.tensor(s).kind == graph::TensorKind::State) target = s;
            const graph::Tensor& t = g.tensor(target);
            const backend::Binding& b = m_spec.bindings[size_t(g.root(target))];
            std::vector<float> v(size_t(t.elements()));
            HEARTH_RETURN_IF_ERROR(b.buffer->read(b.offset, v.data(), v.size() * 4));
            for (float& x : v) x += m_delta;
            HEARTH_RETURN_IF_ERROR(b.buffer->write(b.offset, v.data(), v.size() * 4));
        }
        return Status::ok();
    }

private:
    std::unique_ptr<backend::Program> m_inner;
    backend::ProgramSpec m_spec;
    graph::Op m_op;
    float m_delta;
    bool m_state;
};

// The CPU device under another id, its programs wrong on `op` by `delta` (0: faithful), in the
// op's output or (`state`) in the State pool it advances.
class WrappedCpu final : public backend::Device {
public:
    WrappedCpu(std::string id, graph::Op op, float delta, bool state = false)
        : m_cpu(false, nullptr), m_op(op), m_delta(delta), m_state(state) {
        m_info = m_cpu.info();
        m_info.id = std::move(id);
    }
    const backend::DeviceInfo& info() const override { return m_info; }
    bool supportsOp(const graph::Graph& g, const graph::Node& n) const override { return m_cpu.supportsOp(g, n); }
    Result<std::unique_ptr<backend::Buffer>> allocate(uint64_t bytes) override { return m_cpu.allocate(bytes); }
    Result<uint64_t> loadWeights(const std::vector<graph::Weight>& all, std::span<const backend::WeightUse> used) override {
        return m_cpu.loadWeights(all, used);
    }
    Result<std::unique_ptr<backend::KvPool>> createKvPool(const backend::KvPoolSpec& spec) override {
        return m_cpu.createKvPool(spec);
    }
    int maxKvBlocks(const backend::KvPoolSpec& spec) const override { return m_cpu.maxKvBlocks(spec); }
    Result<std::unique_ptr<backend::Program>> compile(const backend::ProgramSpec& spec) override {
        HEARTH_ASSIGN_OR_RETURN(auto inner, m_cpu.compile(spec));
        if (m_delta == 0.0f) return inner;
        return std::unique_ptr<backend::Program>(new CorruptingProgram(std::move(inner), spec, m_op, m_delta, m_state));
    }

private:
    cpu::CpuDevice m_cpu;
    backend::DeviceInfo m_info;
    graph::Op m_op;
    float m_delta;
    bool m_state;
};

struct Run {
    int exitCode = -1;
    QString out, err;
};

Run cli(const QStringList& args) {
    QProcess p;
    p.start(hearth::test::binDir() + QStringLiteral("/hearth-cli"), QStringList{QStringLiteral("selftest")} + args);
    Run r;
    if (!p.waitForFinished(300000)) return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

std::string failures(const backend::SelftestReport& r) {
    std::string s;
    for (const backend::SelftestCase& c : r.cases)
        if (!c.supported || !c.ok)
            s += c.op + " " + c.type + " " + c.shape + ": err " + std::to_string(c.maxErr) + " tol " + std::to_string(c.tol) +
                 (c.supported ? "" : " unsupported") + " " + c.error + "\n";
    return s;
}

} // namespace

class TestSelftest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every case of the full set, and of the quick one, on the CPU device with threads, at each
    // instruction-set level this CPU runs (the device repacks its weights for the level it opens at).
    void cpuPassesEveryCase_data() {
        QTest::addColumn<QString>("isa");
        for (const std::string& level : cpuIsaLevels()) QTest::newRow(level.c_str()) << QString::fromStdString(level);
    }
    void cpuPassesEveryCase() {
        QFETCH(QString, isa);
        cpu::Isa level = cpu::Isa::Scalar;
        QVERIFY(cpu::isaFromName(isa.toUtf8().constData(), &level));
        QVERIFY(cpu::forceIsa(level));
        struct Restore {
            ~Restore() { cpu::forceIsa(cpu::detectIsa()); }
        } restore;
        cpu::ThreadPool pool(4);
        for (const bool quick : {false, true}) {
            cpu::CpuDevice device(false, &pool);
            backend::SelftestOptions o;
            o.quick = quick;
            auto report = backend::runSelftest(device, o);
            QVERIFY2(report.isOk(), report.status().toString().c_str());
            QVERIFY2(report->passed() && report->unsupportedCount() == 0, failures(*report).c_str());
            qInfo("%s %s: %zu cases in %.2f s", qPrintable(isa), quick ? "quick" : "full", report->cases.size(), report->seconds);
            QVERIFY(report->cases.size() >= (quick ? 20u : 150u));
            if (quick) continue;
            // Every op of the set, every quantizable weight type for the matrix ops, every K/V type.
            std::set<std::string> ops, weightTypes, kvTypes;
            for (const backend::SelftestCase& c : report->cases) {
                ops.insert(c.op);
                if (c.op == "mat_mul") weightTypes.insert(c.type);
                if (c.op == "attention") kvTypes.insert(c.type);
            }
            for (int op = 0; op < graph::kOpCount; ++op)
                QVERIFY2(ops.count(graph::opName(graph::Op(op))), graph::opName(graph::Op(op)));
            for (const char* t : {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                                  "IQ4_NL", "IQ4_XS", "MXFP4", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M",
                                  "TQ1_0", "TQ2_0"})
                QVERIFY2(weightTypes.count(t), t);
            QVERIFY(kvTypes == (std::set<std::string>{"F32", "F16", "Q8_0"}));
            // Types without a quantizer are tested on random blocks, so none is left out.
            QVERIFY(report->notQuantizable.empty());
        }
    }

    // The same seed gives the same cases and errors; another seed other shapes.
    void deterministic() {
        auto run = [](uint64_t seed) {
            cpu::CpuDevice device(false, nullptr);
            backend::SelftestOptions o;
            o.seed = seed;
            return backend::runSelftest(device, o);
        };
        auto a = run(7), b = run(7), c = run(8);
        QVERIFY(a.isOk() && b.isOk() && c.isOk());
        QCOMPARE(a->cases.size(), b->cases.size());
        bool shapesDiffer = false;
        for (size_t i = 0; i < a->cases.size(); ++i) {
            QVERIFY(a->cases[i].shape == b->cases[i].shape);
            QCOMPARE(a->cases[i].maxErr, b->cases[i].maxErr);
            shapesDiffer = shapesDiffer || (i < c->cases.size() && a->cases[i].shape != c->cases[i].shape);
        }
        QVERIFY(shapesDiffer);
    }

    // Parts deal every case to exactly one of them, each type whole to one part; a part outside
    // 0 .. parts - 1 is refused.
    void partsDealEveryCaseOnce() {
        auto run = [](int part, int parts) {
            cpu::CpuDevice device(false, nullptr);
            backend::SelftestOptions o;
            o.quick = true;
            o.part = part;
            o.parts = parts;
            return backend::runSelftest(device, o);
        };
        auto whole = run(0, 1);
        QVERIFY2(whole.isOk(), whole.status().toString().c_str());
        std::multiset<std::string> all, dealt;
        for (const backend::SelftestCase& c : whole->cases) all.insert(c.op + "|" + c.type + "|" + c.shape);
        std::map<std::string, int> typePart;
        for (int part = 0; part < 3; ++part) {
            auto some = run(part, 3);
            QVERIFY2(some.isOk(), some.status().toString().c_str());
            QVERIFY(!some->cases.empty());
            QVERIFY(some->cases.size() < whole->cases.size());
            for (const backend::SelftestCase& c : some->cases) {
                dealt.insert(c.op + "|" + c.type + "|" + c.shape);
                const auto [at, added] = typePart.try_emplace(c.type, part);
                QCOMPARE(at->second, part);
            }
        }
        QVERIFY(dealt == all);
        for (const auto& [part, parts] : {std::pair{3, 3}, std::pair{-1, 3}, std::pair{0, 0}}) {
            auto bad = run(part, parts);
            QVERIFY(!bad.isOk());
            QCOMPARE(int(bad.status().code()), int(ErrorCode::InvalidArgument));
        }
    }

    // A device 1e-2 off on Scale fails exactly the scale cases; the comparison has teeth.
    void corruptedOpIsCaught() {
        for (const bool quick : {false, true}) {
            WrappedCpu device("wrapped", graph::Op::Scale, 1e-2f);
            backend::SelftestOptions o;
            o.quick = quick;
            auto report = backend::runSelftest(device, o);
            QVERIFY2(report.isOk(), report.status().toString().c_str());
            QVERIFY(!report->passed());
            QVERIFY2(report->failing() == std::vector<std::string>{"scale F32"}, failures(*report).c_str());
            int scaleCases = 0;
            for (const backend::SelftestCase& c : report->cases) {
                QVERIFY(c.supported);
                QCOMPARE(c.ok, c.op != "scale");
                if (c.op != "scale") continue;
                ++scaleCases;
                QVERIFY2(c.maxErr > 1e-3 && c.maxErr < 1e-1, std::to_string(c.maxErr).c_str());
            }
            QVERIFY(scaleCases > 0);
        }
        // And a faithful wrapper passes: the failure above is the corruption's alone.
        WrappedCpu faithful("wrapped", graph::Op::Scale, 0.0f);
        auto ok = backend::runSelftest(faithful, {});
        QVERIFY(ok.isOk() && ok->passed());
    }

    // A device whose delta rule leaves a wrong state behind (its outputs right) fails exactly the
    // delta_net cases: the State pools are compared after the run too.
    void corruptedStateIsCaught() {
        for (const bool quick : {false, true}) {
            WrappedCpu device("wrapped", graph::Op::DeltaNet, 1e-2f, true);
            backend::SelftestOptions o;
            o.quick = quick;
            auto report = backend::runSelftest(device, o);
            QVERIFY2(report.isOk(), report.status().toString().c_str());
            QVERIFY2(report->failing() == std::vector<std::string>{"delta_net F32"}, failures(*report).c_str());
            int cases = 0;
            for (const backend::SelftestCase& c : report->cases) {
                if (c.op != "delta_net") continue;
                ++cases;
                QVERIFY2(c.maxErr > 1e-3 && c.error.find("ssm_state.0") != std::string::npos, c.error.c_str());
            }
            QVERIFY(cases >= (quick ? 1 : 20));
        }
    }

    // A GPU failing the quick check is not used: the load runs on the CPU alone and says why;
    // HEARTH_SKIP_DEVICE_CHECK=1 skips the check.
    void runnerLeavesAFailingGpuOut() {
        HEARTH_REQUIRE_TEST_FILE(QStringLiteral("models/stories260K.gguf"));
        auto file = gguf::File::open(test::testDataPath(QStringLiteral("models/stories260K.gguf")));
        QVERIFY(file.isOk());
        auto arch = model::loadArchitecture(*file);
        QVERIFY(arch.isOk());
        auto config = [](float delta) {
            runtime::RunnerConfig rc;
            rc.device = "vulkan:0";
            rc.numBlocks = 8;
            rc.open = [delta](const std::string& id, cpu::ThreadPool* pool) -> Result<std::unique_ptr<backend::Device>> {
                if (id != "vulkan:0") return backend::openDevice(id, pool);
                return std::unique_ptr<backend::Device>(new WrappedCpu(id, graph::Op::Scale, delta));
            };
            return rc;
        };
        qunsetenv("HEARTH_SKIP_DEVICE_CHECK");
        auto bad = runtime::ModelRunner::create(**arch, config(1e-2f));
        QVERIFY2(bad.isOk(), bad.status().toString().c_str());
        QCOMPARE((*bad)->deviceCount(), size_t(1));
        QCOMPARE((*bad)->gpuLayers(), 0);
        QCOMPARE((*bad)->deviceId(), std::string("cpu"));
        QVERIFY2((*bad)->deviceWarning().find("scale") != std::string::npos, (*bad)->deviceWarning().c_str());

        auto good = runtime::ModelRunner::create(**arch, config(0.0f));
        QVERIFY2(good.isOk(), good.status().toString().c_str());
        QCOMPARE((*good)->deviceCount(), size_t(2));
        QCOMPARE((*good)->deviceId(), std::string("vulkan:0"));
        QVERIFY((*good)->deviceWarning().empty());

        qputenv("HEARTH_SKIP_DEVICE_CHECK", "1");
        auto skipped = runtime::ModelRunner::create(**arch, config(1e-2f));
        qunsetenv("HEARTH_SKIP_DEVICE_CHECK");
        QVERIFY2(skipped.isOk(), skipped.status().toString().c_str());
        QCOMPARE((*skipped)->deviceCount(), size_t(2));
        QVERIFY((*skipped)->deviceWarning().empty());
    }

    void cliJsonAndExitCodes() {
        Run j = cli({QStringLiteral("--device"), QStringLiteral("cpu"), QStringLiteral("--json"), QStringLiteral("--quick"),
                     QStringLiteral("--seed"), QStringLiteral("3")});
        QCOMPARE(j.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(j.out.toUtf8()).object();
        QCOMPARE(o["device"].toString(), QStringLiteral("cpu"));
        // Every level this CPU runs, in turn, each with the whole case list.
        QStringList levels;
        for (const std::string& l : cpuIsaLevels()) levels << QString::fromStdString(l);
        QVERIFY(levels.size() >= 1 && levels.front() == QLatin1String("scalar"));
        QCOMPARE(o["isa_levels"].toVariant().toStringList(), levels);
        const QJsonArray ops = o["ops"].toArray();
        QVERIFY(ops.size() >= 20 * levels.size());
        QMap<QString, int> perLevel;
        for (const QJsonValue& v : ops) {
            const QJsonObject c = v.toObject();
            for (const char* key : {"op", "type", "shape", "max_err", "tol", "ok", "supported", "isa"})
                QVERIFY2(c.contains(QLatin1String(key)), key);
            ++perLevel[c["isa"].toString()];
            QVERIFY(c["ok"].toBool() && c["supported"].toBool());
            QVERIFY(c["max_err"].toDouble() <= c["tol"].toDouble());
        }

        QCOMPARE(perLevel.size(), levels.size());
        for (const QString& l : levels) QCOMPARE(perLevel.value(l), int(ops.size() / levels.size()));

        // One level: only its cases; a level this CPU lacks, or --isa off the CPU: bad usage.
        Run one = cli({QStringLiteral("--json"), QStringLiteral("--quick"), QStringLiteral("--isa"), QStringLiteral("scalar")});
        QCOMPARE(one.exitCode, 0);
        const QJsonObject oneObj = QJsonDocument::fromJson(one.out.toUtf8()).object();
        QCOMPARE(oneObj["isa_levels"].toVariant().toStringList(), QStringList{QStringLiteral("scalar")});
        QCOMPARE(oneObj["ops"].toArray().size(), int(ops.size() / levels.size()));
        Run badIsa = cli({QStringLiteral("--quick"), QStringLiteral("--isa"), QStringLiteral("sse9")});
        QCOMPARE(badIsa.exitCode, 2);
        QVERIFY2(badIsa.err.contains(QLatin1String("not a level this CPU runs")), qPrintable(badIsa.err));
        QCOMPARE(cli({QStringLiteral("--device"), QStringLiteral("ref"), QStringLiteral("--isa"), QStringLiteral("scalar")}).exitCode, 2);

        Run text = cli({QStringLiteral("--quick")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY(text.out.contains(QLatin1String("device cpu")));
        QVERIFY(text.out.contains(QLatin1String(" 0 FAIL")));

        Run flag = cli({QStringLiteral("--bogus")});
        QCOMPARE(flag.exitCode, 2);
        QVERIFY(flag.err.contains(QLatin1String("unknown argument")));
        QCOMPARE(cli({QStringLiteral("--seed"), QStringLiteral("x")}).exitCode, 2);
        QCOMPARE(cli({QStringLiteral("--device")}).exitCode, 2);
        Run unknown = cli({QStringLiteral("--device"), QStringLiteral("nosuch:0")});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY(unknown.err.contains(QLatin1String("cannot open device")));
        // Not built in, or no such device: the same.
        QCOMPARE(cli({QStringLiteral("--device"), QStringLiteral("vulkan:99")}).exitCode, 2);
    }

    void cliFullRunOnTheCpu() {
        Run r = cli({QStringLiteral("--device"), QStringLiteral("cpu")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains(QLatin1String("mat_mul     Q4_K")));
        QVERIFY(!r.out.contains(QLatin1String("FAIL ")));
        QString summary;
        for (const std::string& l : cpuIsaLevels()) {
            QVERIFY2(r.out.contains(QStringLiteral("cases at %1: ").arg(QString::fromStdString(l))), l.c_str());
            summary += (summary.isEmpty() ? "" : ", ") + QString::fromStdString(l) + " ok";
        }
        if (cpuIsaLevels().size() > 1) QVERIFY2(r.out.contains("CPU levels: " + summary), qPrintable(r.out.right(300)));
    }
};

QTEST_GUILESS_MAIN(TestSelftest)
#include "test_selftest.moc"
