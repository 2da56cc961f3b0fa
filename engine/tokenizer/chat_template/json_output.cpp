// JSON output for the tojson filter, byte for byte as Python's json.dumps writes it (separators,
// indentation, ensure_ascii, key conversion, NaN/Infinity, escapes).
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hearth::tmpl {

namespace {

constexpr int kMaxJsonDepth = 1000;

void appendJsonString(std::string& out, std::string_view s, bool ensureAscii) {
    out.push_back('"');
    char buf[16];
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x80) {
            switch (b) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (b < 0x20 || (ensureAscii && b == 0x7F)) {
                    std::snprintf(buf, sizeof buf, "\\u%04x", b);
                    out += buf;
                } else {
                    out.push_back(static_cast<char>(b));
                }
            }
            ++i;
            continue;
        }
        Utf8Char c = decodeUtf8(s, i);
        if (!ensureAscii) {
            out.append(s.substr(i, c.len));
        } else if (c.cp < 0x10000) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c.cp));
            out += buf;
        } else {
            const char32_t v = c.cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                          static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
            out += buf;
        }
        i += c.len;
    }
    out.push_back('"');
}

std::string jsonFloat(double f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f < 0 ? "-Infinity" : "Infinity";
    return formatPyFloat(f);
}

class JsonWriter {
public:
    explicit JsonWriter(const JsonDumpOptions& o) : m_opt(o) {
        if (m_opt.hasIndentString) {
            m_indent = m_opt.indentString;
            m_pretty = true;
        } else if (m_opt.indent >= 0) {
            m_indent.assign(static_cast<size_t>(m_opt.indent), ' ');
            m_pretty = true;
        }
        if (m_opt.customSeparators) {
            m_itemSep = m_opt.itemSeparator;
            m_keySep = m_opt.keySeparator;
        } else {
            m_itemSep = m_pretty ? "," : ", ";
            m_keySep = ": ";
        }
    }

    Status write(const Value& v, int level) {
        if (level > kMaxJsonDepth) return invalidArgument("value nested too deeply for tojson");
        if (m_out.size() > (size_t(1) << 28)) return outOfRange("tojson output too large");
        switch (v.kind()) {
        case Kind::None: m_out += "null"; return Status::ok();
        case Kind::Bool: m_out += v.boolValue() ? "true" : "false"; return Status::ok();
        case Kind::Int: m_out += std::to_string(v.intValue()); return Status::ok();
        case Kind::Float: m_out += jsonFloat(v.numberValue()); return Status::ok();
        case Kind::String: appendJsonString(m_out, v.str(), m_opt.ensureAscii); return Status::ok();
        case Kind::List:
            if (!isSequenceList(v)) break; // generators and dict views are not serializable
            return writeList(v.items(), level);
        case Kind::Dict: return writeDict(v.dictData(), level);
        default: break;
        }
        return invalidArgument("Object of type " + typeName(v) + " is not JSON serializable");
    }

    std::string take() { return std::move(m_out); }

private:
    void newline(int level) {
        if (!m_pretty) return;
        m_out.push_back('\n');
        for (int i = 0; i < level; ++i) m_out += m_indent;
    }

    Status writeList(const std::vector<Value>& items, int level) {
        if (items.empty()) {
            m_out += "[]";
            return Status::ok();
        }
        m_out.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) m_out += m_itemSep;
            newline(level + 1);
            HEARTH_RETURN_IF_ERROR(write(items[i], level + 1));
        }
        newline(level);
        m_out.push_back(']');
        return Status::ok();
    }

    static Result<std::string> keyString(const Value& k) {
        switch (k.kind()) {
        case Kind::String: return k.str();
        case Kind::Bool: return std::string(k.boolValue() ? "true" : "false");
        case Kind::None: return std::string("null");
        case Kind::Int: return std::to_string(k.intValue());
        case Kind::Float: return jsonFloat(k.numberValue());
        default:
            return invalidArgument("keys must be str, int, float, bool or None, not " + typeName(k));
        }
    }

    Status writeDict(const DictData& d, int level) {
        if (d.entries.empty()) {
            m_out += "{}";
            return Status::ok();
        }
        std::vector<const std::pair<Value, Value>*> order;
        for (const auto& e : d.entries) order.push_back(&e);
        if (m_opt.sortKeys) {
            Status st;
            std::stable_sort(order.begin(), order.end(), [&](const auto* a, const auto* b) {
                Result<int> c = compareValues(a->first, b->first);
                if (!c) {
                    st = c.status();
                    return false;
                }
                return *c < 0;
            });
            HEARTH_RETURN_IF_ERROR(st);
        }
        m_out.push_back('{');
        bool first = true;
        for (const auto* e : order) {
            if (!first) m_out += m_itemSep;
            first = false;
            newline(level + 1);
            HEARTH_ASSIGN_OR_RETURN(std::string key, keyString(e->first));
            appendJsonString(m_out, key, m_opt.ensureAscii);
            m_out += m_keySep;
            HEARTH_RETURN_IF_ERROR(write(e->second, level + 1));
        }
        newline(level);
        m_out.push_back('}');
        return Status::ok();
    }

    const JsonDumpOptions& m_opt;
    std::string m_out;
    std::string m_indent;
    std::string m_itemSep;
    std::string m_keySep;
    bool m_pretty = false;
};

} // namespace

Result<std::string> jsonDumps(const Value& v, const JsonDumpOptions& options) {
    JsonWriter w(options);
    HEARTH_RETURN_IF_ERROR(w.write(v, 0));
    return w.take();
}

} // namespace hearth::tmpl
