// Sampling settings as the JSON text a conversation stores ("{}" means: the app's defaults).
#pragma once

#include "services/service_types.h"

#include <QString>

namespace hearth::app {

// {"temperature":0.7,"top_k":40,"top_p":0.95,"min_p":0.05,"repetition_penalty":1,"seed":0,
//  "max_tokens":512,"stop":["..."]}
QString samplingToJson(const Sampling& sampling);

// Reads the fields present over `defaults`; malformed text, wrong types and out-of-range values
// are ignored field by field (a stored row never breaks a conversation).
Sampling samplingFromJson(const QString& json, const Sampling& defaults);

// Whether the text names no field (the conversation follows the defaults).
bool samplingJsonIsDefault(const QString& json);

} // namespace hearth::app
