// Turns chat messages into the Markdown the transcript shows: fenced code blocks get a "Copy
// code" link in front of them and their text is collected, so a click copies exactly the code;
// a reply's reasoning becomes a block that a click on its header opens and closes.
#pragma once

#include <QString>
#include <QStringList>

class QColor;
class QPalette;
class QTextDocument;

namespace hearth::ui {

// The scheme of the transcript's own links: hearth:copy/K (code block K), hearth:copy-message/I,
// hearth:edit/I (message I of the transcript), hearth:think/I (open or close the reasoning of
// message I; I = the number of messages: the reply being written).
inline constexpr const char* kChatLinkScheme = "hearth";

// Returns `text` with "[Copy code](hearth:copy/K)" before every fenced code block (``` or ~~~,
// with an optional language), K counting on from codeBlocks.size(); appends each block's text
// (without the fences, ending in a newline) to codeBlocks. An unterminated fence (a reply still
// streaming) runs to the end of the text.
QString withCopyLinks(const QString& text, QStringList& codeBlocks);
// The same with K counting on from `firstNumber` (codeBlocks then holds this text's blocks only).
QString withCopyLinks(const QString& text, QStringList& codeBlocks, int firstNumber);

// The header of a reasoning block: "Thinking…" while it is written (thinking), then "Thought for
// N s" (rounded, at least 1), or "Thoughts" when the time is unknown (ms <= 0).
QString reasoningHeader(bool thinking, double ms);

// A reply's reasoning block for message `index`: its header as a link (hearth:think/index) with
// an arrow saying whether it is open, and when `expanded` the reasoning quoted below it (every
// line in one block quote). Ends with a blank line.
QString reasoningBlock(const QString& reasoning, const QString& header, int index, bool expanded);

// Gives the text of every open reasoning block of a document made from that Markdown (the block
// quote right after a hearth:think link) the colour `color`, so it reads apart from the answer.
void tintReasoning(QTextDocument* document, const QColor& color);

// A message's header in the transcript's Markdown: a link "hearth:who/ROLE" (role "user",
// "assistant" or "system") that decorateTranscript turns into a coloured heading.
QString messageHeader(const QString& role, const QString& label);

// Dresses the document's blocks from position `from` on for the palette: coloured headers,
// code blocks on a shaded
// background with their keywords, strings, comments and numbers coloured, and open reasoning
// blocks tinted between the text's colour and the background's.
void decorateTranscript(QTextDocument* document, int from, const QPalette& palette);

// "N tokens · first token T ms · S tok/s".
QString statsLine(int tokens, double ttftMs, double tokensPerSecond);

} // namespace hearth::ui
