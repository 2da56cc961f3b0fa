// Code-block copy links and reasoning blocks for the chat transcript's Markdown.
#include "chat_markdown.h"

#include <QColor>
#include <QObject>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

#include <algorithm>
#include <cmath>

namespace hearth::ui {

namespace {

// The fence a line opens or closes ("```" or "~~~" and longer), or empty.
QString fenceOf(const QString& line) {
    const QString t = line.trimmed();
    for (QChar c : {QLatin1Char('`'), QLatin1Char('~')}) {
        qsizetype n = 0;
        while (n < t.size() && t[n] == c) ++n;
        if (n >= 3) return t.left(n);
    }
    return QString();
}

} // namespace

QString withCopyLinks(const QString& text, QStringList& codeBlocks) {
    const QStringList lines = text.split(QLatin1Char('\n'));
    QString out;
    QString open;   // the fence of the block being read, empty outside blocks
    QString code;
    for (const QString& line : lines) {
        const QString fence = fenceOf(line);
        if (open.isEmpty()) {
            if (!fence.isEmpty()) {
                open = fence;
                code.clear();
                // Its own paragraph: a blank line before it, unless at the start.
                if (!out.isEmpty() && !out.endsWith(QStringLiteral("\n\n"))) out += QLatin1Char('\n');
                out += QStringLiteral("[Copy code](%1:copy/%2)\n\n")
                           .arg(QLatin1String(kChatLinkScheme))
                           .arg(codeBlocks.size());
            }
            out += line + QLatin1Char('\n');
            continue;
        }
        out += line + QLatin1Char('\n');
        // A closing fence is the same character, at least as long, with nothing after it.
        if (!fence.isEmpty() && fence[0] == open[0] && fence.size() >= open.size() &&
            line.trimmed() == fence) {
            codeBlocks << code;
            open.clear();
        } else {
            code += line + QLatin1Char('\n');
        }
    }
    if (!open.isEmpty()) codeBlocks << code;
    if (!text.endsWith(QLatin1Char('\n')) && out.endsWith(QLatin1Char('\n'))) out.chop(1);
    return out;
}

QString reasoningHeader(bool thinking, double ms) {
    if (thinking) return QObject::tr("Thinking…");
    if (ms <= 0.0) return QObject::tr("Thoughts");
    const int seconds = std::max(1, int(std::lround(ms / 1000.0)));
    return QObject::tr("Thought for %1 s").arg(seconds);
}

QString reasoningBlock(const QString& reasoning, const QString& header, int index, bool expanded) {
    // Link text may not hold an unescaped ']' (the header is ours, but stay safe).
    QString label = header;
    label.replace(QLatin1Char(']'), QStringLiteral("\\]"));
    QString md = QStringLiteral("[%1 %2](%3:think/%4)\n\n")
                     .arg(expanded ? QStringLiteral("▾") : QStringLiteral("▸"), label,
                          QLatin1String(kChatLinkScheme))
                     .arg(index);
    if (!expanded) return md;
    QString quoted;
    const QStringList lines = reasoning.trimmed().split(QLatin1Char('\n'));
    for (const QString& line : lines) {
        const QString t = line.trimmed();
        quoted += t.isEmpty() ? QStringLiteral(">\n") : QStringLiteral("> ") + line + QLatin1Char('\n');
    }
    if (reasoning.trimmed().isEmpty()) quoted = QStringLiteral("> …\n");
    return md + quoted + QLatin1Char('\n');
}

void tintReasoning(QTextDocument* document, const QColor& color) {
    const QString thinkLink = QLatin1String(kChatLinkScheme) + QStringLiteral(":think/");
    QTextCharFormat tint;
    tint.setForeground(color);
    bool inReasoning = false; // after a reasoning header, until the block quote ends
    for (QTextBlock b = document->begin(); b.isValid(); b = b.next()) {
        const bool quoted = b.blockFormat().intProperty(QTextFormat::BlockQuoteLevel) > 0;
        if (inReasoning && quoted) {
            QTextCursor c(document);
            c.setPosition(b.position());
            c.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
            c.mergeCharFormat(tint);
            continue;
        }
        inReasoning = false;
        for (auto it = b.begin(); !it.atEnd(); ++it)
            if (it.fragment().charFormat().anchorHref().startsWith(thinkLink)) inReasoning = true;
    }
}

} // namespace hearth::ui
