// Simple syntax colouring for the transcript's code blocks: keywords, strings, comments and
// numbers of common languages, line by line, with the colours chosen for a light or dark palette.
#pragma once

#include <QColor>
#include <QList>
#include <QString>

namespace hearth::ui {

enum class CodeToken { Keyword, String, Comment, Number };

struct CodeSpan {
    int start = 0;
    int length = 0;
    CodeToken kind = CodeToken::Keyword;
    bool operator==(const CodeSpan&) const = default;
};

// The spans of one line of code in `language` (a fence's info string: "cpp", "python", "js",
// "rust", "go", "java", "sh", "sql", "json"..., case-insensitive; unknown or empty: strings and
// numbers only). `state` carries an open block comment or triple-quoted string from one line to
// the next; start a block with 0.
QList<CodeSpan> highlightLine(const QString& line, const QString& language, int& state);

// The colour of a kind of token on a background: darker hues on light backgrounds, lighter on dark.
QColor codeColour(CodeToken kind, const QColor& background);

} // namespace hearth::ui
