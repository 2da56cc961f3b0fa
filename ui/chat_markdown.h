// Turns chat messages into the Markdown the transcript shows: fenced code blocks get a "Copy
// code" link in front of them and their text is collected, so a click copies exactly the code.
#pragma once

#include <QString>
#include <QStringList>

namespace hearth::ui {

// The scheme of the transcript's own links: hearth:copy/K (code block K), hearth:copy-message/I,
// hearth:edit/I (message I of the transcript).
inline constexpr const char* kChatLinkScheme = "hearth";

// Returns `text` with "[Copy code](hearth:copy/K)" before every fenced code block (``` or ~~~,
// with an optional language), K counting on from codeBlocks.size(); appends each block's text
// (without the fences, ending in a newline) to codeBlocks. An unterminated fence (a reply still
// streaming) runs to the end of the text.
QString withCopyLinks(const QString& text, QStringList& codeBlocks);

} // namespace hearth::ui
