// Structured output: JSON Schema and GBNF grammars for requests, and forced tool calls written as
// the model's template writes them, each function's arguments constrained by its schema.
#include "server/structured_output.h"

#include "hearth/grammar.h"

namespace hearth::server {

namespace {

using OJson = nlohmann::ordered_json;

// A GBNF string literal for `text`.
std::string literal(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

ApiResult<GrammarPtr> compile(const std::string& gbnf, const std::string& param) {
    auto g = grammar::parseGbnf(gbnf);
    if (!g) return invalidRequest(g.status().message(), param);
    return *g;
}

// JSON text of a name inside a JSON string literal of the grammar.
std::string jsonString(const std::string& s) { return OJson(s).dump(-1, ' ', false, OJson::error_handler_t::replace); }

} // namespace

ToolCallStyle detectToolCallStyle(const Engine& engine) {
    tmpl::ChatRequest probe;
    tmpl::ChatMessage user;
    user.role = "user";
    user.content = "probe";
    tmpl::ChatMessage call;
    call.role = "assistant";
    call.toolCalls.push_back({"call_probe", "probe_fn", "{}"});
    probe.messages = {std::move(user), std::move(call)};
    probe.toolsJson = R"([{"type":"function","function":{"name":"probe_fn","parameters":{"type":"object"}}}])";
    auto text = engine.renderChat(probe);
    if (!text) return ToolCallStyle::Hermes;
    if (text->find("to=functions.") != std::string::npos) return ToolCallStyle::Harmony;
    if (text->find("<tool_call>") != std::string::npos) return ToolCallStyle::Hermes;
    if (text->find("[TOOL_CALLS]") != std::string::npos) return ToolCallStyle::Mistral;
    if (text->find("\"parameters\"") != std::string::npos || text->find("<|python_tag|>") != std::string::npos)
        return ToolCallStyle::Llama;
    return ToolCallStyle::Hermes;
}

ApiResult<GrammarPtr> schemaGrammar(const OJson& schema, const std::string& param, bool strict) {
    grammar::SchemaLimits limits;
    limits.strict = strict;
    auto gbnf = grammar::jsonSchemaToGbnf(dumpJson(schema), limits);
    if (!gbnf) return invalidRequest("cannot use this JSON schema: " + gbnf.status().message(), param);
    return compile(*gbnf, param);
}

ApiResult<GrammarPtr> outputGrammar(const CommonParams& p) {
    if (!p.grammar.empty()) return compile(p.grammar, "grammar");
    switch (p.responseFormat.kind) {
    case ResponseFormat::Kind::Text: return GrammarPtr();
    case ResponseFormat::Kind::JsonObject: return compile(grammar::anyJsonObjectGbnf(), "response_format");
    case ResponseFormat::Kind::JsonSchema:
        return schemaGrammar(p.responseFormat.schema, "response_format", p.responseFormat.strict);
    }
    return GrammarPtr();
}

ApiResult<GrammarPtr> toolCallGrammar(const std::vector<ToolFunction>& tools, const ToolChoice& choice,
                                      ToolCallStyle style) {
    if (choice.mode != ToolChoiceMode::Required && choice.mode != ToolChoiceMode::Named) return GrammarPtr();
    std::string rules;
    std::vector<std::string> alternatives;
    for (size_t i = 0; i < tools.size(); ++i) {
        const ToolFunction& f = tools[i];
        if (choice.mode == ToolChoiceMode::Named && f.name != choice.name) continue;
        const OJson schema = f.parameters.is_null() ? OJson{{"type", "object"}} : f.parameters;
        grammar::SchemaLimits limits;
        limits.strict = f.strict;
        auto gbnf = grammar::jsonSchemaToGbnf(dumpJson(schema), limits);
        if (!gbnf)
            return invalidRequest("cannot use the parameters of tool '" + f.name + "': " + gbnf.status().message(),
                                  "tools[" + std::to_string(i) + "].function.parameters");
        const std::string prefix = "tool" + std::to_string(i) + "-";
        rules += grammar::prefixRuleNames(*gbnf, prefix) + "\n";
        if (style == ToolCallStyle::Harmony) {
            alternatives.push_back(literal("<|channel|>commentary to=functions." + f.name + " <|constrain|>json<|message|>") +
                                   " " + prefix + "root");
            continue;
        }
        const char* argsKey = style == ToolCallStyle::Llama ? "parameters" : "arguments";
        alternatives.push_back(literal("{\"name\": " + jsonString(f.name) + ", \"" + argsKey + "\": ") + " " +
                               prefix + "root " + literal("}"));
    }
    if (alternatives.empty()) return invalidRequest("'tool_choice' names no function in 'tools'", "tool_choice");
    std::string call = "call ::= ";
    for (size_t i = 0; i < alternatives.size(); ++i) call += (i ? " | " : "") + alternatives[i];
    // More calls after the first, when parallel calls are allowed (bounded).
    const std::string more =
        choice.parallel ? "{0," + std::to_string(kMaxForcedCalls - 1) + "}" : std::string("{0}");
    std::string root;
    switch (style) {
    case ToolCallStyle::Hermes:
        root = "root ::= tagged ( \"\\n\" tagged )" + more + "\ntagged ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"";
        break;
    case ToolCallStyle::Llama:
        root = "root ::= call ( \"; \" call )" + more;
        break;
    case ToolCallStyle::Mistral:
        root = "root ::= \"[TOOL_CALLS][\" call ( \", \" call )" + more + " \"]\"";
        break;
    case ToolCallStyle::Harmony:
        // One call per turn (the call token ends it), after an optional analysis message.
        root = "root ::= analysis? call\n"
               "analysis ::= \"<|channel|>analysis<|message|>\" ( [^<] | \"<\" [^|] )* \"<|end|><|start|>assistant\"";
        break;
    }
    return compile(root + "\n" + call + "\n" + rules, "tools");
}

} // namespace hearth::server
