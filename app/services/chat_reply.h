// How the app holds a chat with the engine: the template request built from the chat's messages
// (an assistant turn's reasoning passed apart from its content), and the reader that splits a
// streamed reply into reasoning and answer (<think> blocks, gpt-oss harmony messages).
#pragma once

#include "services/service_types.h"

#include "hearth/chat_output.h"
#include "hearth/chat_template.h"

#include <QJsonArray>
#include <QList>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::app {

// How a reply's text is read, chosen from the rendered prompt.
enum class ReplyFormat {
    Plain,       // all answer (plain completions)
    Think,       // <think>...</think> may open the reply
    ThinkOpened, // the prompt ended inside <think> (DeepSeek-R1): the reply starts as reasoning
    Harmony,     // gpt-oss: analysis channel is reasoning, final channel is the answer
};

// The chat format the rendered prompt (with the assistant's turn opened) asks of the reply.
ReplyFormat replyFormatFor(std::string_view renderedPrompt);

// The template request of a chat, the assistant's turn opened. Each message is {"role",
// "content"}; an assistant message with reasoning also carries "reasoning_content" (the field
// Qwen3-style templates read, most of them to drop it from earlier turns); the content never
// holds the reasoning.
// With `tools` (OpenAI's [{"type": "function", "function": {...}}], as the API takes them) the
// template is given them; an assistant turn's calls go as "tool_calls" (the arguments as a
// mapping where they read as JSON, as templates expect), a tool's result as role "tool" with
// its "tool_call_id".
tmpl::ChatRequest chatRequestFor(const QList<ChatMessage>& messages, const QJsonArray& tools = {});

struct ReplyPiece {
    std::string reasoning;
    std::string answer;
    bool empty() const { return reasoning.empty() && answer.empty(); }
};

// A tool call in the text form the chat reads calls from (a Hermes <tool_call> block, on a line of
// its own), for calls that come apart from the text: gpt-oss harmony messages, a remote
// provider's tool_calls. Arguments that are not a JSON object go as {}.
std::string toolCallText(std::string_view name, std::string_view arguments);

// Splits a reply streamed piece by piece. Marker text cut across pieces is held back until it is
// whole or cannot be a marker; finish() returns what was held. Harmony tool calls come at the
// end of the answer as toolCallText blocks.
class ReplyReader {
public:
    explicit ReplyReader(ReplyFormat format = ReplyFormat::Plain);

    ReplyPiece push(std::string_view text);
    ReplyPiece finish();
    ReplyFormat format() const { return m_format; }

private:
    ReplyFormat m_format;
    std::optional<tmpl::ReasoningSplitter> m_think;
    std::optional<tmpl::HarmonyParser> m_harmony;
    std::vector<tmpl::OutputCall> m_calls; // harmony calls, whole, by index
    void collect(const std::vector<tmpl::OutputCall>& pieces);
};

} // namespace hearth::app
