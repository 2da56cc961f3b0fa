// wontRunReason: hub files marked "won't run here" before download, from the quantization in the
// file name and the architecture in the hub's GGUF metadata, against the engine's own lists.
#include "services/hub_client.h"
#include "services/model_support.h"

#include "hearth/model_info.h"

#include <QtTest>

using hearth::app::HubClient;
using hearth::app::wontRunReason;

class TestModelSupport : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void architecturesComeFromTheEngine() {
        const QStringList archs = hearth::app::supportedArchitectureNames();
        for (const char* a : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "gpt-oss", "phi3", "mistral3", "gemma4"})
            QVERIFY2(archs.contains(QLatin1String(a)), a);
        QVERIFY(!archs.contains(QStringLiteral("gemma2")));
    }

    void decision_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("architecture");
        QTest::addColumn<QString>("reason"); // empty: runs
        const QString none;
        QTest::newRow("Q4_K_M qwen2") << "qwen2.5-0.5b-instruct-q4_k_m.gguf" << "qwen2" << none;
        QTest::newRow("Q8_0, no architecture") << "Qwen3-0.6B-Q8_0.gguf" << none << none;
        QTest::newRow("IQ4_XS") << "model-IQ4_XS.gguf" << "llama" << none;
        QTest::newRow("IQ4_NL") << "model-IQ4_NL.gguf" << "llama" << none;
        QTest::newRow("MXFP4 gpt-oss") << "gpt-oss-20b-mxfp4.gguf" << "gpt-oss" << none;
        QTest::newRow("Q3_K_XL") << "model-UD-Q3_K_XL.gguf" << "qwen3moe" << none;
        QTest::newRow("Q5_K_S split") << "big-Q5_K_S-00001-of-00002.gguf" << "llama" << none;
        QTest::newRow("BF16") << "model-BF16.gguf" << "phi3" << none;
        QTest::newRow("F16") << "model-f16.gguf" << "gemma3" << none;
        QTest::newRow("unrecognised name") << "model.gguf" << "llama" << none;
        // The 1-3 bit i-quants and the ternary types dequantize now: no longer marked.
        QTest::newRow("IQ1_S") << "model-IQ1_S.gguf" << "llama" << none;
        QTest::newRow("IQ1_M") << "model-IQ1_M.gguf" << "llama" << none;
        QTest::newRow("IQ2_XXS") << "model-IQ2_XXS.gguf" << "qwen2" << none;
        QTest::newRow("IQ2_M") << "model-IQ2_M.gguf" << "qwen2" << none;
        QTest::newRow("IQ3_XS") << "model-IQ3_XS.gguf" << "qwen2" << none;
        QTest::newRow("IQ3_XXS") << "model-IQ3_XXS.gguf" << "qwen2" << none;
        QTest::newRow("TQ1_0") << "bitnet-TQ1_0.gguf" << "llama" << none;
        QTest::newRow("TQ2_0") << "bitnet-TQ2_0.gguf" << "llama" << none;
        QTest::newRow("gemma2") << "gemma-2-2b-it-Q4_K_M.gguf" << "gemma2" << "architecture 'gemma2' not supported";
        QTest::newRow("mamba IQ1_S: the architecture first")
            << "mamba-IQ1_S.gguf" << "mamba" << "architecture 'mamba' not supported";
    }
    void decision() {
        QFETCH(QString, file);
        QFETCH(QString, architecture);
        QFETCH(QString, reason);
        QCOMPARE(wontRunReason(HubClient::quantizationOf(file), architecture), reason);
    }

    // Every GGUF weight type now has a dequantizer; a type the engine names without one (the
    // integer and F64 tensor types, which no file name carries) is still refused by the rule.
    void typeWithoutDequantizer() {
        QCOMPARE(wontRunReason(QStringLiteral("F64"), QStringLiteral("llama")),
                 QStringLiteral("F64 weights not supported"));
        QCOMPARE(wontRunReason(QStringLiteral("IQ1_M"), QStringLiteral("llama")), QString());
    }

    // A file on disk, from its header facts: the architecture, then every type without a
    // dequantizer (integer tensors are not weights and do not count).
    void fromTheFileHeader() {
        hearth::ModelInfo info;
        info.architecture = "llama";
        info.tensorsByType = {{"F32", 3}, {"Q4_K", 10}, {"I32", 1}};
        QCOMPARE(wontRunReason(info), QString());
        info.tensorsByType["F64"] = 1;
        QCOMPARE(wontRunReason(info), QStringLiteral("F64 weights not supported"));
        info.architecture = "mamba";
        QCOMPARE(wontRunReason(info), QStringLiteral("architecture 'mamba' not supported"));
    }
};

QTEST_GUILESS_MAIN(TestModelSupport)
#include "test_model_support.moc"
