// Global functions of the template environment: range (with the sandbox's size cap), dict,
// namespace, joiner, raise_exception and strftime_now (C-locale strftime on an injectable clock).
#include "tokenizer/chat_template/interp.h"

#include <cstdio>

namespace hearth::tmpl {

namespace {

constexpr int64_t kMaxRange = 100000; // Jinja's sandbox refuses larger ranges

using GlobalFn = Result<Value> (*)(Interp&, CallArgs&);

class BuiltinFunction : public CallableData {
public:
    BuiltinFunction(std::string name, GlobalFn fn) : CallableData(std::move(name)), m_fn(fn) {}
    Result<Value> call(Interp& interp, CallArgs& args) const override { return m_fn(interp, args); }

private:
    GlobalFn m_fn;
};

Result<Value> gRange(Interp& interp, CallArgs& args) {
    if (!args.keyword.empty()) return invalidArgument("range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) return invalidArgument("range expected 1 to 3 arguments, got " + std::to_string(p.size()));
    for (const Value& v : p)
        if (!v.isInt() && !v.isBool())
            return invalidArgument("'" + typeName(v) + "' object cannot be interpreted as an integer");
    int64_t start = 0, stop, step = 1;
    if (p.size() == 1) {
        stop = p[0].intValue();
    } else {
        start = p[0].intValue();
        stop = p[1].intValue();
        if (p.size() == 3) step = p[2].intValue();
    }
    if (step == 0) return invalidArgument("range() arg 3 must not be zero");
    __int128 count = 0;
    if (step > 0 && stop > start) count = ((__int128)stop - start + step - 1) / step;
    if (step < 0 && stop < start) count = ((__int128)start - stop - step - 1) / -step;
    if (count > kMaxRange)
        return outOfRange("Range too big. The sandbox blocks ranges larger than MAX_RANGE (" + std::to_string(kMaxRange) + ").");
    HEARTH_RETURN_IF_ERROR(interp.checkItems(static_cast<size_t>(count)));
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step));
    return Value::list(std::move(items));
}

Result<Value> gDict(Interp&, CallArgs& args) {
    auto d = std::make_shared<DictData>();
    if (args.positional.size() > 1) return invalidArgument("dict expected at most 1 argument");
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (src.isDict()) {
            *d = src.dictData();
        } else {
            HEARTH_ASSIGN_OR_RETURN(std::vector<Value> pairs, iterateValue(src));
            for (const Value& pair : pairs) {
                HEARTH_ASSIGN_OR_RETURN(std::vector<Value> kv, iterateValue(pair));
                if (kv.size() != 2) return invalidArgument("dictionary update sequence element has wrong length");
                HEARTH_RETURN_IF_ERROR(d->set(kv[0], kv[1]));
            }
        }
    }
    for (const auto& [k, v] : args.keyword) HEARTH_RETURN_IF_ERROR(d->set(Value::string(k), v));
    return Value::dict(std::move(d));
}

Result<Value> gNamespace(Interp& interp, CallArgs& args) {
    auto ns = std::make_shared<NamespaceData>();
    if (args.positional.size() > 1) return invalidArgument("namespace() takes at most one positional argument");
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (!src.isDict()) return invalidArgument("namespace() argument must be a mapping");
        for (const auto& [k, v] : src.dictData().entries) {
            if (!k.isString()) return invalidArgument("namespace() keys must be strings");
            ns->set(k.str(), v);
        }
    }
    for (const auto& [k, v] : args.keyword) ns->set(k, v);
    interp.track(ns);
    return Value::ns(std::move(ns));
}

Result<Value> gRaiseException(Interp& interp, CallArgs& args) {
    ArgReader r("raise_exception", args, {"message"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("raise_exception", r));
    return interp.raised(r.has(0) ? toStr(r.get(0)) : std::string());
}

Result<Value> gStrftimeNow(Interp& interp, CallArgs& args) {
    ArgReader r("strftime_now", args, {"format"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("strftime_now", r));
    if (!r.has(0) || !r.get(0).isString()) return invalidArgument("strftime_now() needs a format string");
    std::string out = formatStrftime(r.get(0).str(), interp.now());
    HEARTH_RETURN_IF_ERROR(interp.checkSize(out.size()));
    return Value::string(std::move(out));
}

class Joiner : public CallableData {
public:
    explicit Joiner(std::string sep) : CallableData("joiner"), m_sep(std::move(sep)) {}
    Result<Value> call(Interp&, CallArgs&) const override {
        if (!m_used) {
            m_used = true;
            return Value::string("");
        }
        return Value::string(m_sep);
    }

private:
    std::string m_sep;
    mutable bool m_used = false;
};

Result<Value> gJoiner(Interp&, CallArgs& args) {
    ArgReader r("joiner", args, {"sep"});
    HEARTH_RETURN_IF_ERROR(checkNoExtra("joiner", r));
    return Value::callable(std::make_shared<Joiner>(r.has(0) ? toStr(r.get(0)) : std::string(", ")));
}

// ---- dates ----

int64_t daysFromCivil(int64_t y, int m, int d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

bool isLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int dayOfYear(const DateTime& t) { // 1-based
    static const int kCum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    const int m = std::clamp(t.month, 1, 12);
    return kCum[m - 1] + t.day + (m > 2 && isLeap(t.year) ? 1 : 0);
}

int weekday(const DateTime& t) { // 0 = Sunday
    const int64_t days = daysFromCivil(t.year, std::clamp(t.month, 1, 12), t.day);
    return static_cast<int>(((days % 7) + 11) % 7);
}

void isoWeek(const DateTime& t, int& isoYear, int& week) {
    const int wd = (weekday(t) + 6) % 7; // Monday = 0
    const int yday = dayOfYear(t) - 1;
    int w = (yday - wd + 10) / 7;
    isoYear = t.year;
    if (w < 1) {
        --isoYear;
        DateTime dec31{isoYear, 12, 31, 0, 0, 0};
        const int pwd = (weekday(dec31) + 6) % 7;
        w = (dayOfYear(dec31) - 1 - pwd + 10) / 7;
    } else if (w == 53) {
        const int daysInYear = isLeap(t.year) ? 366 : 365;
        if (yday - wd + 3 >= daysInYear) {
            w = 1;
            ++isoYear;
        }
    }
    week = w;
}

} // namespace

std::string formatStrftime(const std::string& format, const DateTime& t) {
    static const char* const kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    static const char* const kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                          "July",    "August",   "September", "October", "November", "December"};
    const int wd = weekday(t);
    const int month = std::clamp(t.month, 1, 12);
    std::string out;
    for (size_t i = 0; i < format.size(); ++i) {
        if (format[i] != '%' || i + 1 >= format.size()) {
            out.push_back(format[i]);
            continue;
        }
        size_t j = i + 1;
        char pad = 0; // 0: default, '-': none, '_': spaces, '0': zeros
        if (format[j] == '-' || format[j] == '_' || format[j] == '0') {
            pad = format[j];
            if (++j >= format.size()) {
                out.append(format, i, std::string::npos);
                break;
            }
        }
        auto num = [&](long value, int width, char defaultFill = '0') {
            char buf[32];
            const char fill = pad == '_' ? ' ' : (pad == '0' ? '0' : defaultFill);
            if (pad == '-')
                std::snprintf(buf, sizeof buf, "%ld", value);
            else if (fill == ' ')
                std::snprintf(buf, sizeof buf, "%*ld", width, value);
            else
                std::snprintf(buf, sizeof buf, "%0*ld", width, value);
            out += buf;
        };
        const char c = format[j];
        switch (c) {
        case 'a': out.append(kDays[wd], 3); break;
        case 'A': out += kDays[wd]; break;
        case 'b':
        case 'h': out.append(kMonths[month - 1], 3); break;
        case 'B': out += kMonths[month - 1]; break;
        case 'c':
            out.append(kDays[wd], 3);
            out += ' ';
            out.append(kMonths[month - 1], 3);
            out += ' ';
            {
                char buf[64];
                std::snprintf(buf, sizeof buf, "%2d %02d:%02d:%02d %d", t.day, t.hour, t.minute, t.second, t.year);
                out += buf;
            }
            break;
        case 'C': num(t.year / 100, 2); break;
        case 'd': num(t.day, 2); break;
        case 'e': num(t.day, 2, ' '); break;
        case 'D': out += formatStrftime("%m/%d/%y", t); break;
        case 'F': out += formatStrftime("%Y-%m-%d", t); break;
        case 'f': out += "000000"; break;
        case 'H': num(t.hour, 2); break;
        case 'I': num(t.hour % 12 == 0 ? 12 : t.hour % 12, 2); break;
        case 'j': num(dayOfYear(t), 3); break;
        case 'k': num(t.hour, 2, ' '); break;
        case 'l': num(t.hour % 12 == 0 ? 12 : t.hour % 12, 2, ' '); break;
        case 'm': num(month, 2); break;
        case 'M': num(t.minute, 2); break;
        case 'n': out += '\n'; break;
        case 'p': out += t.hour < 12 ? "AM" : "PM"; break;
        case 'P': out += t.hour < 12 ? "am" : "pm"; break;
        case 'r': out += formatStrftime("%I:%M:%S %p", t); break;
        case 'R': out += formatStrftime("%H:%M", t); break;
        case 'S': num(t.second, 2); break;
        case 't': out += '\t'; break;
        case 'T':
        case 'X': out += formatStrftime("%H:%M:%S", t); break;
        case 'u': num(wd == 0 ? 7 : wd, 1); break;
        case 'w': num(wd, 1); break;
        case 'U': num((dayOfYear(t) - 1 + 7 - wd) / 7, 2); break;
        case 'W': num((dayOfYear(t) - 1 + 7 - ((wd + 6) % 7)) / 7, 2); break;
        case 'V':
        case 'G':
        case 'g': {
            int isoYear = 0, week = 0;
            isoWeek(t, isoYear, week);
            if (c == 'V')
                num(week, 2);
            else if (c == 'G')
                num(isoYear, 4);
            else
                num(isoYear % 100, 2);
            break;
        }
        case 'x': out += formatStrftime("%m/%d/%y", t); break;
        case 'y': num(t.year % 100, 2); break;
        case 'Y': num(t.year, 1); break;
        case 'z':
        case 'Z': break; // naive datetime: empty, as Python prints
        case '%': out += '%'; break;
        default: out.append(format, i, j - i + 1); break;
        }
        i = j;
    }
    return out;
}

ScopePtr makeGlobals() {
    auto g = std::make_shared<Scope>(nullptr);
    auto add = [&](const char* name, GlobalFn fn) {
        g->set(name, Value::callable(std::make_shared<BuiltinFunction>(name, fn)));
    };
    add("range", gRange);
    add("dict", gDict);
    add("namespace", gNamespace);
    add("joiner", gJoiner);
    add("raise_exception", gRaiseException);
    add("strftime_now", gStrftimeNow);
    return g;
}

} // namespace hearth::tmpl
