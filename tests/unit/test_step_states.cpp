// prepareStep's recurrent-state rows and its checks: the [n][3] rows it writes for runs, resumes
// and snapshots, and a clear error for every malformed batch (slots outside the pool, two
// sequences writing one slot, a slot read while another writes it, tokens out of order or
// interleaved, a fresh state not at position 0, snapshots outside the step or doubled).
#include "graph/step.h"

#include <QtTest>

#include <string>
#include <vector>

using namespace hearth;
using namespace hearth::graph;

namespace {

const std::vector<int32_t> kTable0{0, 1}, kTable1{2, 3};

// Two sequences: s0 at positions [p0, p0 + n0), s1 at [p1, p1 + n1), in that order.
Batch twoSequences(int p0, int n0, int p1, int n1) {
    Batch b;
    b.blockTables = {kTable0, kTable1};
    for (int i = 0; i < n0; ++i) b.tokens.push_back({5, p0 + i, 0, i == n0 - 1});
    for (int i = 0; i < n1; ++i) b.tokens.push_back({6, p1 + i, 1, i == n1 - 1});
    return b;
}

// The error prepareStep gives (empty when it accepts the batch).
std::string errorOf(const Batch& b, int slots = 4) {
    StepInputs in;
    const Result<StepShape> r = prepareStep(b, 100, 16, 4, in, slots);
    return r.isOk() ? std::string() : r.status().message();
}

} // namespace

class TestStepStates : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rowsForRunsResumesAndSnapshots() {
        Batch b = twoSequences(0, 3, 8, 2);
        b.states = {{-1, 2, {{2, 3}}}, {1, 1, {}}};
        StepInputs in;
        const Result<StepShape> r = prepareStep(b, 100, 16, 4, in, 4);
        QVERIFY2(r.isOk(), r.status().toString().c_str());
        // s0: fresh into 2, snapshot after its second token (position 1) into 3; s1 continues slot 1.
        const std::vector<int32_t> want{-1, 2, -1, 2, 2, 3, 2, 2, -1, 1, 1, -1, 1, 1, -1};
        QCOMPARE(in.stateInfo, want);
        // Without state slots the rows stay empty.
        QVERIFY(prepareStep(twoSequences(0, 3, 8, 2), 100, 16, 4, in, 0).isOk());
        QVERIFY(in.stateInfo.empty());
    }

    void malformedBatchesAreRefused() {
        struct Bad {
            const char* what;
            Batch batch;
            std::string message;
        };
        std::vector<Bad> cases;
        auto with = [](Batch b, std::vector<SequenceState> states) {
            b.states = std::move(states);
            return b;
        };
        cases.push_back({"no states", twoSequences(0, 2, 0, 2), "needs a state for every sequence"});
        cases.push_back({"write slot outside", with(twoSequences(0, 2, 0, 2), {{-1, 0, {}}, {-1, 4, {}}}), "outside the pool"});
        cases.push_back({"read slot outside", with(twoSequences(4, 2, 0, 2), {{7, 0, {}}, {-1, 1, {}}}), "outside the pool"});
        cases.push_back({"one slot, two writers", with(twoSequences(0, 2, 0, 2), {{-1, 1, {}}, {-1, 1, {}}}),
                         "two sequences write one state slot"});
        cases.push_back({"snapshot into another's slot", with(twoSequences(0, 2, 0, 2), {{-1, 0, {{1, 1}}}, {-1, 1, {}}}),
                         "two sequences write one state slot"});
        cases.push_back({"reads what another writes", with(twoSequences(4, 2, 0, 2), {{1, 0, {}}, {-1, 1, {}}}),
                         "reads a state slot another one writes"});
        cases.push_back({"fresh past position 0", with(twoSequences(4, 2, 0, 2), {{-1, 0, {}}, {-1, 1, {}}}),
                         "must start at position 0"});
        cases.push_back({"snapshot outside the step", with(twoSequences(0, 2, 0, 2), {{-1, 0, {{5, 2}}}, {-1, 1, {}}}),
                         "outside the step"});
        cases.push_back({"two snapshots at one position",
                         with(twoSequences(0, 2, 0, 2), {{-1, 0, {{1, 2}, {1, 3}}}, {-1, 1, {}}}), "two snapshots"});
        Batch swapped = twoSequences(0, 3, 0, 1);
        std::swap(swapped.tokens[0], swapped.tokens[1]);
        cases.push_back({"out of order", with(swapped, {{2, 2, {}}, {-1, 1, {}}}), "consecutive and in position order"});
        Batch interleaved = twoSequences(0, 2, 0, 2);
        std::swap(interleaved.tokens[1], interleaved.tokens[2]);
        cases.push_back({"interleaved", with(interleaved, {{-1, 0, {}}, {-1, 1, {}}}), "consecutive and in position order"});
        for (const Bad& c : cases) {
            const std::string e = errorOf(c.batch);
            QVERIFY2(e.find(c.message) != std::string::npos, (std::string(c.what) + ": '" + e + "'").c_str());
        }
        // The control: the same shapes, well formed, are accepted.
        QCOMPARE(errorOf(with(twoSequences(0, 2, 0, 2), {{-1, 0, {{1, 2}}}, {-1, 1, {}}})), std::string());
    }
};

QTEST_APPLESS_MAIN(TestStepStates)
#include "test_step_states.moc"
