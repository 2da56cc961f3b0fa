// Keyword, string, comment and number spans of a code line, from a small table of languages.
#include "chat_highlight.h"

#include <QSet>

namespace hearth::ui {

namespace {

struct Language {
    QSet<QString> keywords;
    QStringList lineComments;      // "//", "#", "--"
    QString blockOpen, blockClose; // "/*" "*/"
    bool tripleQuotes = false;     // python's """ and '''
    bool backtick = false;         // js template strings, shell
};

QSet<QString> words(const char* list) {
    QSet<QString> out;
    for (const QString& w : QString::fromLatin1(list).split(QLatin1Char(' '), Qt::SkipEmptyParts)) out.insert(w);
    return out;
}

const Language* languageFor(const QString& name) {
    static const Language c{words("auto break case char const continue default do double else enum extern float for "
                                  "goto if inline int long register return short signed sizeof static struct switch "
                                  "typedef union unsigned void volatile while bool true false nullptr class namespace "
                                  "template typename public private protected virtual override const_cast static_cast "
                                  "dynamic_cast reinterpret_cast new delete this using try catch throw noexcept "
                                  "constexpr consteval decltype operator friend mutable explicit include define "
                                  "ifdef ifndef endif pragma std size_t uint8_t uint32_t int32_t uint64_t int64_t"),
                            {QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/")};
    static const Language python{words("and as assert async await break class continue def del elif else except "
                                       "False finally for from global if import in is lambda None nonlocal not or "
                                       "pass raise return True try while with yield self print len range"),
                                 {QStringLiteral("#")}, {}, {}, true};
    static const Language js{words("async await break case catch class const continue debugger default delete do "
                                   "else export extends false finally for function if import in instanceof let new "
                                   "null return super switch this throw true try typeof undefined var void while "
                                   "with yield interface type enum implements readonly string number boolean any"),
                             {QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), false, true};
    static const Language rust{words("as async await break const continue crate dyn else enum extern false fn for if "
                                     "impl in let loop match mod move mut pub ref return self Self static struct super "
                                     "trait true type unsafe use where while i32 i64 u8 u32 u64 usize f32 f64 bool "
                                     "str String Vec Option Some None Result Ok Err"),
                               {QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/")};
    static const Language go{words("break case chan const continue default defer else fallthrough for func go goto "
                                   "if import interface map package range return select struct switch type var nil "
                                   "true false int string bool error byte rune float64"),
                             {QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/"), false, true};
    static const Language java{words("abstract boolean break byte case catch char class const continue default do "
                                     "double else enum extends final finally float for if implements import "
                                     "instanceof int interface long new null package private protected public return "
                                     "short static super switch this throw throws true false try void while var val "
                                     "fun String"),
                               {QStringLiteral("//")}, QStringLiteral("/*"), QStringLiteral("*/")};
    static const Language shell{words("if then else elif fi for while do done case esac in function return export "
                                      "local echo cd set unset source exit sudo"),
                                {QStringLiteral("#")}, {}, {}, false, true};
    static const Language sql{words("SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE INDEX DROP "
                                    "ALTER ADD JOIN LEFT RIGHT INNER OUTER ON AND OR NOT NULL PRIMARY KEY ORDER BY "
                                    "GROUP HAVING LIMIT AS DISTINCT select from where insert into values update set "
                                    "delete create table index drop alter join on and or not null order by group "
                                    "limit as"),
                              {QStringLiteral("--")}, QStringLiteral("/*"), QStringLiteral("*/")};
    static const Language json{words("true false null"), {}, {}, {}};
    static const Language plain{};
    const QString l = name.trimmed().toLower();
    if (l == QLatin1String("c") || l == QLatin1String("cpp") || l == QLatin1String("c++") || l == QLatin1String("h") ||
        l == QLatin1String("hpp") || l == QLatin1String("cc") || l == QLatin1String("cuda") || l == QLatin1String("cs") ||
        l == QLatin1String("csharp") || l == QLatin1String("glsl"))
        return &c;
    if (l == QLatin1String("python") || l == QLatin1String("py")) return &python;
    if (l == QLatin1String("js") || l == QLatin1String("javascript") || l == QLatin1String("ts") ||
        l == QLatin1String("typescript") || l == QLatin1String("jsx") || l == QLatin1String("tsx"))
        return &js;
    if (l == QLatin1String("rust") || l == QLatin1String("rs")) return &rust;
    if (l == QLatin1String("go") || l == QLatin1String("golang")) return &go;
    if (l == QLatin1String("java") || l == QLatin1String("kotlin") || l == QLatin1String("kt") ||
        l == QLatin1String("scala"))
        return &java;
    if (l == QLatin1String("sh") || l == QLatin1String("bash") || l == QLatin1String("shell") ||
        l == QLatin1String("zsh") || l == QLatin1String("console"))
        return &shell;
    if (l == QLatin1String("sql")) return &sql;
    if (l == QLatin1String("json")) return &json;
    return &plain;
}

bool isWordChar(QChar ch) { return ch.isLetterOrNumber() || ch == QLatin1Char('_'); }

// state: 0 nothing open, 1 block comment, 2 """ string, 3 ''' string.
constexpr int kBlockComment = 1;

} // namespace

QList<CodeSpan> highlightLine(const QString& line, const QString& language, int& state) {
    const Language& lang = *languageFor(language);
    QList<CodeSpan> spans;
    const int n = int(line.size());
    int i = 0;
    // Something left open by an earlier line.
    if (state != 0) {
        const QString close = state == kBlockComment ? lang.blockClose
                              : state == 2           ? QStringLiteral("\"\"\"")
                                                     : QStringLiteral("'''");
        const int end = close.isEmpty() ? -1 : int(line.indexOf(close));
        const CodeToken kind = state == kBlockComment ? CodeToken::Comment : CodeToken::String;
        if (end < 0) {
            if (n > 0) spans.append({0, n, kind});
            return spans;
        }
        i = end + int(close.size());
        spans.append({0, i, kind});
        state = 0;
    }
    while (i < n) {
        const QChar ch = line[i];
        const QStringView rest = QStringView(line).mid(i);
        bool matched = false;
        for (const QString& lc : lang.lineComments)
            if (rest.startsWith(lc)) {
                spans.append({i, n - i, CodeToken::Comment});
                return spans;
            }
        if (!lang.blockOpen.isEmpty() && rest.startsWith(lang.blockOpen)) {
            const int end = int(line.indexOf(lang.blockClose, i + lang.blockOpen.size()));
            if (end < 0) {
                spans.append({i, n - i, CodeToken::Comment});
                state = kBlockComment;
                return spans;
            }
            const int stop = end + int(lang.blockClose.size());
            spans.append({i, stop - i, CodeToken::Comment});
            i = stop;
            continue;
        }
        if (lang.tripleQuotes && (rest.startsWith(QLatin1String("\"\"\"")) || rest.startsWith(QLatin1String("'''")))) {
            const QString q = rest.left(3).toString();
            const int end = int(line.indexOf(q, i + 3));
            if (end < 0) {
                spans.append({i, n - i, CodeToken::String});
                state = q[0] == QLatin1Char('"') ? 2 : 3;
                return spans;
            }
            spans.append({i, end + 3 - i, CodeToken::String});
            i = end + 3;
            continue;
        }
        if (ch == QLatin1Char('"') || ch == QLatin1Char('\'') || (lang.backtick && ch == QLatin1Char('`'))) {
            int j = i + 1;
            while (j < n && line[j] != ch) j += line[j] == QLatin1Char('\\') ? 2 : 1;
            const int stop = std::min(n, j + 1);
            spans.append({i, stop - i, CodeToken::String});
            i = stop;
            continue;
        }
        if (ch.isDigit() && (i == 0 || !isWordChar(line[i - 1]))) {
            int j = i + 1;
            while (j < n && (line[j].isLetterOrNumber() || line[j] == QLatin1Char('.') || line[j] == QLatin1Char('_'))) ++j;
            spans.append({i, j - i, CodeToken::Number});
            i = j;
            continue;
        }
        if (isWordChar(ch)) {
            int j = i + 1;
            while (j < n && isWordChar(line[j])) ++j;
            if (lang.keywords.contains(line.mid(i, j - i))) spans.append({i, j - i, CodeToken::Keyword});
            i = j;
            matched = true;
        }
        if (!matched) ++i;
    }
    return spans;
}

QColor codeColour(CodeToken kind, const QColor& background) {
    const bool dark = background.lightnessF() < 0.5;
    switch (kind) {
    case CodeToken::Keyword: return dark ? QColor(0x82, 0xaa, 0xff) : QColor(0x00, 0x33, 0xb3);
    case CodeToken::String: return dark ? QColor(0xc3, 0xe8, 0x8d) : QColor(0x06, 0x7d, 0x17);
    case CodeToken::Comment: return dark ? QColor(0x8b, 0x94, 0x9e) : QColor(0x6a, 0x73, 0x7d);
    case CodeToken::Number: return dark ? QColor(0xf7, 0x8c, 0x6c) : QColor(0xa0, 0x45, 0x00);
    }
    return background.lightnessF() < 0.5 ? QColor(Qt::white) : QColor(Qt::black);
}

} // namespace hearth::ui
