// Python string formatting for templates: the `%` operator ("%s", "%05.2f", "%(name)s") and
// str.format ("{}", "{0:>8}", "{name!r}") with the common parts of the format-spec language.
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <cmath>
#include <cstdio>

namespace hearth::tmpl {

namespace {

Result<double> needNumber(const Value& v, char type) {
    if (v.isNumber()) return v.numberValue();
    return invalidArgument(std::string("%") + type + " format: a real number is required, not " + typeName(v));
}

// Formats a number with printf for one conversion (flags/width/precision already in `spec`).
std::string printfNumber(const std::string& spec, char type, const Value& v) {
    char buf[512];
    std::string fmt = "%" + spec;
    if (type == 'd' || type == 'i' || type == 'u') {
        fmt += "lld";
        std::snprintf(buf, sizeof buf, fmt.c_str(), static_cast<long long>(v.isFloat() ? std::trunc(v.numberValue()) : v.intValue()));
    } else if (type == 'x' || type == 'X' || type == 'o') {
        const long long x = v.intValue();
        fmt += std::string("ll") + type;
        if (x < 0) {
            std::snprintf(buf, sizeof buf, fmt.c_str(), static_cast<unsigned long long>(-x));
            return "-" + std::string(buf);
        }
        std::snprintf(buf, sizeof buf, fmt.c_str(), static_cast<unsigned long long>(x));
    } else {
        fmt += type;
        std::snprintf(buf, sizeof buf, fmt.c_str(), v.numberValue());
    }
    return buf;
}

Result<std::string> convertOne(char type, const std::string& flags, int width, int precision, const Value& v) {
    std::string body;
    switch (type) {
    case 's': body = toStr(v); break;
    case 'r':
    case 'a': body = repr(v); break;
    case 'c':
        if (v.isInt()) {
            if (v.intValue() < 0 || v.intValue() > 0x10FFFF) return invalidArgument("%c arg not in range(0x110000)");
            appendUtf8(body, static_cast<char32_t>(v.intValue()));
        } else if (v.isString() && utf8Length(v.str()) == 1) {
            body = v.str();
        } else {
            return invalidArgument("%c requires int or char");
        }
        break;
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
        if (!v.isNumber()) return invalidArgument(std::string("%") + type + " format: a number is required, not " + typeName(v));
        if ((type == 'x' || type == 'X' || type == 'o') && v.isFloat())
            return invalidArgument(std::string("%") + type + " format: an integer is required, not float");
        std::string spec = flags;
        if (width > 0) spec += std::to_string(width);
        if (precision >= 0) spec += "." + std::to_string(precision);
        return printfNumber(spec, type, v);
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
        HEARTH_ASSIGN_OR_RETURN(double d, needNumber(v, type));
        (void)d;
        std::string spec = flags;
        if (width > 0) spec += std::to_string(width);
        spec += "." + std::to_string(precision >= 0 ? std::min(precision, 100) : 6);
        return printfNumber(spec, type, v);
    }
    default: return invalidArgument(std::string("unsupported format character '") + type + "'");
    }
    if (precision >= 0 && (type == 's' || type == 'r' || type == 'a')) {
        const std::vector<size_t> off = utf8Offsets(body);
        if (static_cast<size_t>(precision) + 1 < off.size()) body = body.substr(0, off[static_cast<size_t>(precision)]);
    }
    const auto len = static_cast<int>(utf8Length(body));
    if (width > len) {
        const std::string padding(static_cast<size_t>(width - len), ' ');
        body = flags.find('-') != std::string::npos ? body + padding : padding + body;
    }
    return body;
}

// Splits "[[fill]align][sign][#][0][width][,][.precision][type]".
struct Spec {
    std::string fill = " ";
    char align = 0;
    char sign = 0;
    bool alt = false;
    bool zero = false;
    int width = 0;
    bool comma = false;
    int precision = -1;
    char type = 0;
};

Result<Spec> parseSpec(const std::string& s) {
    Spec spec;
    size_t i = 0;
    auto isAlign = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (!s.empty()) {
        const Utf8Char first = decodeUtf8(s, 0);
        if (first.len < s.size() && isAlign(s[first.len])) {
            spec.fill = s.substr(0, first.len);
            spec.align = s[first.len];
            i = first.len + 1;
        } else if (isAlign(s[0])) {
            spec.align = s[0];
            i = 1;
        }
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
    if (i < s.size() && s[i] == '#') {
        spec.alt = true;
        ++i;
    }
    if (i < s.size() && s[i] == '0') {
        spec.zero = true;
        ++i;
    }
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) spec.width = std::min(spec.width * 10 + (s[i++] - '0'), 100000000);
    if (i < s.size() && (s[i] == ',' || s[i] == '_')) {
        spec.comma = true;
        ++i;
    }
    if (i < s.size() && s[i] == '.') {
        ++i;
        spec.precision = 0;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) spec.precision = std::min(spec.precision * 10 + (s[i++] - '0'), 100000000);
    }
    if (i < s.size()) spec.type = s[i++];
    if (i != s.size()) return invalidArgument("Invalid format specifier '" + s + "'");
    return spec;
}

Result<std::string> applySpec(Interp& interp, const Value& v, const std::string& specText) {
    if (specText.empty()) return toStr(v);
    HEARTH_ASSIGN_OR_RETURN(Spec spec, parseSpec(specText));
    if (spec.width > 0) HEARTH_RETURN_IF_ERROR(interp.checkSize(static_cast<size_t>(spec.width)));
    std::string body;
    bool numeric = false;
    char t = spec.type;
    if (t == 0 && v.isInt()) t = 'd';
    if (t == 0 || t == 's') {
        if (v.isString() || t == 's') {
            body = toStr(v);
            if (spec.precision >= 0) {
                const std::vector<size_t> off = utf8Offsets(body);
                if (static_cast<size_t>(spec.precision) + 1 < off.size()) body = body.substr(0, off[static_cast<size_t>(spec.precision)]);
            }
        } else if (v.isNumber() && spec.precision >= 0) {
            body = printfNumber("." + std::to_string(spec.precision), 'g', v);
            numeric = true;
        } else {
            body = toStr(v);
            numeric = v.isNumber();
        }
    } else if (t == 'd' || t == 'x' || t == 'X' || t == 'o' || t == 'b' || t == 'n' || t == 'c') {
        if (!v.isInt() && !v.isBool())
            return invalidArgument(std::string("Unknown format code '") + t + "' for object of type '" + typeName(v) + "'");
        int64_t x = v.intValue();
        if (t == 'c') {
            appendUtf8(body, static_cast<char32_t>(std::clamp<int64_t>(x, 0, 0x10FFFF)));
        } else {
            const bool neg = x < 0;
            uint64_t u = neg ? static_cast<uint64_t>(-(x + 1)) + 1 : static_cast<uint64_t>(x);
            const int base = t == 'x' || t == 'X' ? 16 : (t == 'o' ? 8 : (t == 'b' ? 2 : 10));
            std::string digits;
            do {
                const auto d = static_cast<int>(u % static_cast<uint64_t>(base));
                digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : (t == 'X' ? 'A' : 'a') + d - 10));
                u /= static_cast<uint64_t>(base);
            } while (u);
            if (spec.comma && base == 10)
                for (int k = static_cast<int>(digits.size()) - 3; k > 0; k -= 3) digits.insert(static_cast<size_t>(k), ",");
            if (spec.alt && base != 10) digits = std::string("0") + (t == 'b' ? "b" : (t == 'o' ? "o" : (t == 'X' ? "X" : "x"))) + digits;
            body = (neg ? "-" : "") + digits;
            numeric = true;
        }
    } else if (t == 'f' || t == 'F' || t == 'e' || t == 'E' || t == 'g' || t == 'G' || t == '%') {
        if (!v.isNumber())
            return invalidArgument(std::string("Unknown format code '") + t + "' for object of type '" + typeName(v) + "'");
        const int precision = spec.precision >= 0 ? std::min(spec.precision, 100) : 6;
        if (t == '%') {
            body = printfNumber("." + std::to_string(precision), 'f', Value::floating(v.numberValue() * 100)) + "%";
        } else {
            body = printfNumber((spec.alt ? "#." : ".") + std::to_string(precision), t, v);
        }
        numeric = true;
    } else {
        return invalidArgument(std::string("Unknown format code '") + t + "' for object of type '" + typeName(v) + "'");
    }
    if (numeric && spec.sign && !body.empty() && body[0] != '-') {
        if (spec.sign == '+') body = "+" + body;
        if (spec.sign == ' ') body = " " + body;
    }
    char align = spec.align;
    std::string fill = spec.fill;
    if (spec.zero && !spec.align) {
        align = '=';
        fill = "0";
    }
    if (!align) align = numeric ? '>' : '<';
    const auto len = static_cast<int>(utf8Length(body));
    if (spec.width <= len) return body;
    const auto total = static_cast<size_t>(spec.width - len);
    std::string pad;
    for (size_t k = 0; k < total; ++k) pad += fill;
    if (align == '<') return body + pad;
    if (align == '>') return pad + body;
    if (align == '=') {
        const size_t signLen = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
        return body.substr(0, signLen) + pad + body.substr(signLen);
    }
    std::string left, right;
    for (size_t k = 0; k < total / 2; ++k) left += fill;
    for (size_t k = total / 2; k < total; ++k) right += fill;
    return left + body + right;
}

} // namespace

Result<std::string> percentFormat(Interp& interp, const std::string& format, const Value& args, bool escape) {
    std::vector<Value> positional;
    const Value* mapping = nullptr;
    // Python treats any non-tuple, non-str argument with __getitem__ (dict, list, undefined) as a
    // mapping: "%s" prints it whole and unused arguments are not an error.
    bool mappingLike = false;
    if (args.isList() && args.flavor() == ListFlavor::Tuple) {
        positional = args.items();
    } else {
        positional.push_back(args);
        if (args.isDict()) mapping = &args;
        mappingLike = args.isDict() || args.isUndefined() || (args.isList() && args.flavor() == ListFlavor::List);
    }
    size_t next = 0;
    bool usedMapping = false;
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%') {
            out.push_back(format[i]);
            continue;
        }
        if (++i >= format.size()) return invalidArgument("incomplete format");
        const Value* value = nullptr;
        Value keyed;
        if (format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string::npos) return invalidArgument("incomplete format key");
            if (args.isUndefined()) return undefinedError(args);
            if (!mapping) return invalidArgument("format requires a mapping");
            const Value* found = mapping->dictData().find(std::string_view(format).substr(i + 1, close - i - 1));
            if (!found) return invalidArgument("'" + format.substr(i + 1, close - i - 1) + "'");
            keyed = *found;
            value = &keyed;
            usedMapping = true;
            i = close + 1;
        }
        std::string flags;
        while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos) flags.push_back(format[i++]);
        auto readNumber = [&](int& target) -> Status {
            if (i < format.size() && format[i] == '*') {
                if (next >= positional.size() || !positional[next].isInt()) return invalidArgument("* wants int");
                target = static_cast<int>(std::clamp<int64_t>(positional[next++].intValue(), -100000, 100000));
                ++i;
                return Status::ok();
            }
            while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
                target = std::min(target * 10 + (format[i++] - '0'), 100000000);
            }
            return Status::ok();
        };
        int width = 0;
        HEARTH_RETURN_IF_ERROR(readNumber(width));
        if (width < 0) {
            flags += '-';
            width = -width;
        }
        int precision = -1;
        if (i < format.size() && format[i] == '.') {
            ++i;
            precision = 0;
            HEARTH_RETURN_IF_ERROR(readNumber(precision));
        }
        while (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;
        if (i >= format.size()) return invalidArgument("incomplete format");
        const char type = format[i];
        if (type == '%') {
            out.push_back('%');
            continue;
        }
        if (!value) {
            if (next >= positional.size()) return invalidArgument("not enough arguments for format string");
            value = &positional[next++];
        }
        HEARTH_RETURN_IF_ERROR(interp.checkSize(static_cast<size_t>(width)));
        Value escaped;
        if (escape && (type == 's' || type == 'r' || type == 'a') && !value->isMarkup()) {
            escaped = Value::markup(htmlEscape(type == 's' ? toStr(*value) : repr(*value)));
            value = &escaped;
        }
        HEARTH_ASSIGN_OR_RETURN(std::string piece, convertOne(type == 'r' || type == 'a' ? (escape ? 's' : type) : type, flags,
                                                                width, precision, *value));
        out += piece;
        HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    }
    if (!usedMapping && !mappingLike && next < positional.size())
        return invalidArgument("not all arguments converted during string formatting");
    return out;
}

Result<std::string> braceFormat(Interp& interp, const std::string& format, const CallArgs& args, bool escape) {
    std::string out;
    size_t autoIndex = 0;
    bool usedAuto = false, usedManual = false;
    for (size_t i = 0; i < format.size(); ++i) {
        const char c = format[i];
        if (c == '}') {
            if (i + 1 < format.size() && format[i + 1] == '}') {
                out.push_back('}');
                ++i;
                continue;
            }
            return invalidArgument("Single '}' encountered in format string");
        }
        if (c != '{') {
            out.push_back(c);
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{') {
            out.push_back('{');
            ++i;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos) return invalidArgument("Single '{' encountered in format string");
        std::string field = format.substr(i + 1, close - i - 1);
        i = close;
        std::string spec;
        char conversion = 0;
        if (size_t colon = field.find(':'); colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        if (size_t bang = field.find('!'); bang != std::string::npos) {
            if (bang + 2 != field.size()) return invalidArgument("expected ':' after conversion specifier");
            conversion = field[bang + 1];
            field.resize(bang);
        }
        // The first part names the argument; then .attr and [key] parts.
        size_t partEnd = field.find_first_of(".[");
        std::string head = field.substr(0, partEnd);
        Value value;
        if (head.empty()) {
            if (usedManual) return invalidArgument("cannot switch from manual field specification to automatic field numbering");
            usedAuto = true;
            if (autoIndex >= args.positional.size()) return invalidArgument("Replacement index " + std::to_string(autoIndex) + " out of range for positional args tuple");
            value = args.positional[autoIndex++];
        } else if (std::all_of(head.begin(), head.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
            if (usedAuto) return invalidArgument("cannot switch from automatic field numbering to manual field specification");
            usedManual = true;
            int64_t idx = 0;
            if (!parsePyInt(head, 10, idx) || idx < 0 || static_cast<size_t>(idx) >= args.positional.size())
                return invalidArgument("Replacement index " + head + " out of range for positional args tuple");
            value = args.positional[static_cast<size_t>(idx)];
        } else {
            bool found = false;
            for (const auto& [k, v] : args.keyword) {
                if (k == head) {
                    value = v;
                    found = true;
                }
            }
            if (!found) return invalidArgument("'" + head + "'");
        }
        while (partEnd != std::string::npos && partEnd < field.size()) {
            if (field[partEnd] == '.') {
                const size_t nextPart = field.find_first_of(".[", partEnd + 1);
                HEARTH_ASSIGN_OR_RETURN(value, getAttribute(value, field.substr(partEnd + 1, nextPart - partEnd - 1)));
                partEnd = nextPart;
            } else {
                const size_t rb = field.find(']', partEnd);
                if (rb == std::string::npos) return invalidArgument("Missing ']' in format string");
                const std::string key = field.substr(partEnd + 1, rb - partEnd - 1);
                int64_t n = 0;
                Value k = parsePyInt(key, 10, n) ? Value::integer(n) : Value::string(key);
                HEARTH_ASSIGN_OR_RETURN(value, getItem(value, k));
                partEnd = rb + 1;
            }
        }
        if (conversion == 'r' || conversion == 'a') {
            value = Value::string(repr(value));
        } else if (conversion == 's') {
            value = Value::string(toStr(value));
        } else if (conversion) {
            return invalidArgument(std::string("Unknown conversion specifier ") + conversion);
        }
        HEARTH_ASSIGN_OR_RETURN(std::string piece, applySpec(interp, value, spec));
        if (escape && !value.isMarkup()) piece = htmlEscape(piece); // markupsafe formats, then escapes
        out += piece;
        HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    }
    return out;
}

} // namespace hearth::tmpl
