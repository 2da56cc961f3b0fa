// A conversation as a file: Markdown to read or share, and JSON that imports back as a new
// conversation (title, system prompt, sampling, messages with their reasoning and statistics).
#pragma once

#include "services/store.h"

#include "hearth/status.h"

#include <QByteArray>
#include <QList>
#include <QString>

namespace hearth::app {

// The JSON's "format" field; import refuses anything else.
inline constexpr const char* kChatExportFormat = "hearth-chat";
inline constexpr int kChatExportVersion = 1;

struct ExportedChat {
    Conversation conversation;    // id, created and updated are informative only
    QList<StoredMessage> messages; // oldest first; ids are not kept on import
};

// "# Title", the system prompt, then "## You" / "## Assistant" sections with each message
// (an assistant's reasoning in a quote before its answer, an unfinished reply marked so, a
// message's images first, each as "![image N](data:image/png;base64,...)").
QString chatToMarkdown(const ExportedChat& chat);
// A code fence of backticks longer than any run of them in `text`, so that the text cannot close it.
QString markdownFence(const QString& text);

// {"format":"hearth-chat","version":1,"title":...,"model":...,"system_prompt":...,
//  "sampling":{...},"created":ms,"updated":ms,"messages":[{"role","content","reasoning",
//  "reasoning_ms","tokens","ttft_ms","tokens_per_second","context_tokens","state","created",
//  "images":[{"mime_type":"image/png","data":base64}] (only when it has any)}]}
QByteArray chatToJson(const ExportedChat& chat);

// Reads what chatToJson wrote. Malformed JSON, a wrong format or version, a missing or
// mistyped field, an unknown role, an image that is not base64 of a PNG, JPEG, WebP or GIF (or
// more than kMaxImagesPerMessage of them) or more than kMaxImportMessages messages give an
// InvalidFormat status that says what and where; never a crash.
inline constexpr int kMaxImportMessages = 100000;
Result<ExportedChat> chatFromJson(const QByteArray& json);

// The file an export in `format` ("json", else Markdown) goes to: `path` with ".json" or ".md"
// appended unless it ends so already (in any case), as a name typed in a save dialog may not.
QString exportPathFor(const QString& path, const QString& format);
// Writes `chat` as `format` to exportPathFor(path, format), replacing the file only once all of
// it is written; returns the path written, or an IoError that names it.
Result<QString> writeChatExport(const ExportedChat& chat, const QString& path, const QString& format);

} // namespace hearth::app
