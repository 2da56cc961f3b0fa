// Conversion of sampling settings to and from the JSON stored with each conversation.
#include "services/sampling_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace hearth::app {

namespace {

QJsonObject parseObject(const QString& json) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8(), &error);
    return error.error == QJsonParseError::NoError && doc.isObject() ? doc.object() : QJsonObject();
}

void readFloat(const QJsonObject& o, const char* key, float lo, float hi, float& out) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (!v.isDouble()) return;
    const double d = v.toDouble();
    if (std::isfinite(d) && d >= lo && d <= hi) out = float(d);
}

void readInt(const QJsonObject& o, const char* key, int lo, int hi, int& out) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (!v.isDouble()) return;
    const double d = v.toDouble();
    if (std::isfinite(d) && d == std::floor(d) && d >= lo && d <= hi) out = int(d);
}

} // namespace

QString samplingToJson(const Sampling& s) {
    QJsonObject o;
    o.insert(QStringLiteral("temperature"), double(s.temperature));
    o.insert(QStringLiteral("top_k"), s.topK);
    o.insert(QStringLiteral("top_p"), double(s.topP));
    o.insert(QStringLiteral("min_p"), double(s.minP));
    o.insert(QStringLiteral("repetition_penalty"), double(s.repetitionPenalty));
    o.insert(QStringLiteral("seed"), QString::number(s.seed)); // 64-bit: as text
    o.insert(QStringLiteral("max_tokens"), s.maxTokens);
    if (!s.stopStrings.isEmpty()) o.insert(QStringLiteral("stop"), QJsonArray::fromStringList(s.stopStrings));
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

Sampling samplingFromJson(const QString& json, const Sampling& defaults) {
    Sampling s = defaults;
    const QJsonObject o = parseObject(json);
    readFloat(o, "temperature", 0.0f, 10.0f, s.temperature);
    readInt(o, "top_k", 0, 100000, s.topK);
    readFloat(o, "top_p", 0.0f, 1.0f, s.topP);
    readFloat(o, "min_p", 0.0f, 1.0f, s.minP);
    readFloat(o, "repetition_penalty", 0.0f, 10.0f, s.repetitionPenalty);
    readInt(o, "max_tokens", 1, 1 << 20, s.maxTokens);
    const QJsonValue seed = o.value(QStringLiteral("seed"));
    bool ok = false;
    const quint64 parsed = seed.toString().toULongLong(&ok);
    if (ok) s.seed = parsed;
    const QJsonValue stop = o.value(QStringLiteral("stop"));
    if (stop.isArray()) {
        QStringList list;
        for (const QJsonValue& v : stop.toArray())
            if (v.isString() && !v.toString().isEmpty()) list << v.toString();
        s.stopStrings = list;
    }
    return s;
}

bool samplingJsonIsDefault(const QString& json) { return parseObject(json).isEmpty(); }

} // namespace hearth::app
