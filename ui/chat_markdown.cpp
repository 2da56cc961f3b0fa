// Code-block copy links, reasoning blocks and message headers for the chat transcript's
// Markdown, and the decoration of the document made from it (colours, boxes, code colouring).
#include "chat_markdown.h"

#include "chat_highlight.h"
#include "count_text.h"

#include <QPalette>
#include <QTextFragment>
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

QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float((1 - t) * a.redF() + t * b.redF()), float((1 - t) * a.greenF() + t * b.greenF()),
                            float((1 - t) * a.blueF() + t * b.blueF()));
}

// Roughly how bright a colour looks (Rec. 709 weights, no gamma): blue reads dark.
double luminance(const QColor& c) { return 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF(); }

bool isCodeBlock(const QTextBlock& b) {
    const QTextBlockFormat f = b.blockFormat();
    return f.hasProperty(QTextFormat::BlockCodeFence) || f.hasProperty(QTextFormat::BlockCodeLanguage);
}

} // namespace

QString withCopyLinks(const QString& text, QStringList& codeBlocks) {
    return withCopyLinks(text, codeBlocks, int(codeBlocks.size()));
}

QString withCopyLinks(const QString& text, QStringList& codeBlocks, int firstNumber) {
    const int base = firstNumber - int(codeBlocks.size());
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
                           .arg(base + codeBlocks.size());
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

namespace hearth::ui {

QString messageHeader(const QString& role, const QString& label) {
    return QStringLiteral("[%1](%2:who/%3)").arg(label, QLatin1String(kChatLinkScheme), role);
}

QString statsLine(int tokens, double ttftMs, double tokensPerSecond) {
    return QObject::tr("%1 · first token %2 ms · %3 tok/s")
        .arg(countText(tokens, QObject::tr("token"), QObject::tr("tokens")))
        .arg(ttftMs, 0, 'f', 0)
        .arg(tokensPerSecond, 0, 'f', 1);
}

void decorateTranscript(QTextDocument* document, int from, const QPalette& palette) {
    const QColor text = palette.color(QPalette::Text);
    const QColor base = palette.color(QPalette::Base);
    const QColor accent = palette.color(QPalette::Highlight);
    const bool dark = base.lightnessF() < 0.5;
    const QColor reasoning = mix(text, base, 0.4);
    const QColor codeBox = mix(base, text, dark ? 0.10 : 0.06);
    const QColor userHead = dark ? mix(accent, Qt::white, 0.35) : mix(accent, Qt::black, 0.25);
    const QColor assistantHead = dark ? QColor(0x7f, 0xd8, 0xbe) : QColor(0x0b, 0x6e, 0x4f);
    const QColor systemHead = mix(text, base, 0.35);
    // The transcript's own links (copy, edit, regenerate, reasoning...) in the palette's link
    // colour, unless it is hard to read on this background.
    QColor link = palette.color(QPalette::Link);
    if (std::abs(luminance(link) - luminance(base)) < 0.4)
        link = dark ? mix(accent, Qt::white, 0.45) : mix(accent, Qt::black, 0.3);
    QTextCharFormat linkFormat;
    linkFormat.setForeground(link);

    const QString scheme = QLatin1String(kChatLinkScheme);
    const QString thinkLink = scheme + QStringLiteral(":think/");
    const QString whoLink = scheme + QStringLiteral(":who/");
    QTextCharFormat tint;
    tint.setForeground(reasoning);
    bool inReasoning = false; // after a reasoning header, until the block quote ends
    int codeState = 0;
    QTextCursor c(document);
    // One edit block: the layout runs once at its end, not after every format change.
    c.beginEditBlock();
    for (QTextBlock b = document->findBlock(std::max(0, from)); b.isValid(); b = b.next()) {
        const QTextBlockFormat bf = b.blockFormat();
        const bool quoted = bf.intProperty(QTextFormat::BlockQuoteLevel) > 0;
        const bool rule = bf.hasProperty(QTextFormat::BlockTrailingHorizontalRulerWidth);
        auto selectBlock = [&] {
            c.setPosition(b.position());
            c.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
        };
        if (inReasoning && quoted) {
            selectBlock();
            c.mergeCharFormat(tint);
        } else {
            inReasoning = false;
        }
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment fr = it.fragment();
            const QString href = fr.charFormat().anchorHref();
            if (href.startsWith(thinkLink)) inReasoning = true;
            if (!href.startsWith(whoLink)) {
                if (href.startsWith(scheme + QLatin1Char(':'))) {
                    c.setPosition(fr.position());
                    c.setPosition(fr.position() + fr.length(), QTextCursor::KeepAnchor);
                    c.mergeCharFormat(linkFormat);
                }
                continue;
            }
            const QString role = href.mid(whoLink.size());
            const bool user = role == QStringLiteral("user");
            QTextCharFormat head;
            head.setFontUnderline(false);
            head.setFontWeight(QFont::Bold);
            head.setForeground(user ? userHead : role == QStringLiteral("assistant") ? assistantHead : systemHead);
            c.setPosition(fr.position());
            c.setPosition(fr.position() + fr.length(), QTextCursor::KeepAnchor);
            c.mergeCharFormat(head);
        }
        if (rule) continue;
        const bool code = isCodeBlock(b);
        if (code) {
            QTextBlockFormat box;
            box.setBackground(codeBox);
            c.setPosition(b.position());
            c.mergeBlockFormat(box);
            const QString language = bf.stringProperty(QTextFormat::BlockCodeLanguage);
            const QList<CodeSpan> spans = highlightLine(b.text(), language, codeState);
            for (const CodeSpan& span : spans) {
                QTextCharFormat f;
                f.setForeground(codeColour(span.kind, codeBox));
                c.setPosition(b.position() + span.start);
                c.setPosition(b.position() + span.start + span.length, QTextCursor::KeepAnchor);
                c.mergeCharFormat(f);
            }
        } else {
            codeState = 0;
        }
    }
    c.endEditBlock();
}

} // namespace hearth::ui
