// String formats (date, time, date-time, email, uuid, ipv4, hostname) and exact numeric ranges
// (integers digit by digit, decimals through their integer and fraction digits) as grammar
// expressions for the JSON Schema converter.
#include "sample/json_schema.h"

#include <charconv>
#include <cmath>
#include <set>

namespace hearth::grammar::schema {

namespace {

Expr digit() { return cls('0', '9'); }
Expr digits(int64_t min, int64_t max) { return rep(digit(), min, max); }

Expr chars(const std::string& list) {
    CharSet s;
    for (char c : list) s.add(uint8_t(c), uint8_t(c));
    return cls(s);
}

// Decimal strings of equal length with lo <= hi, digit by digit.
Expr sameLength(const std::string& lo, const std::string& hi) {
    if (lo.empty()) return empty();
    if (lo == hi) return lit(lo);
    if (lo[0] == hi[0]) return seq({lit(lo.substr(0, 1)), sameLength(lo.substr(1), hi.substr(1))});
    size_t rest = lo.size() - 1;
    bool loRestZero = lo.find_first_not_of('0', 1) == std::string::npos;
    bool hiRestNine = hi.find_first_not_of('9', 1) == std::string::npos;
    char firstFull = loRestZero ? lo[0] : char(lo[0] + 1);
    char lastFull = hiRestNine ? hi[0] : char(hi[0] - 1);
    std::vector<Expr> alts;
    if (!loRestZero)
        alts.push_back(seq({lit(lo.substr(0, 1)), sameLength(lo.substr(1), std::string(rest, '9'))}));
    if (firstFull <= lastFull)
        alts.push_back(seq({cls(uint32_t(firstFull), uint32_t(lastFull)),
                            digits(int64_t(rest), int64_t(rest))}));
    if (!hiRestNine)
        alts.push_back(seq({lit(hi.substr(0, 1)), sameLength(std::string(rest, '0'), hi.substr(1))}));
    return alt(std::move(alts));
}

// Natural numbers in [a, b] (b absent: up to kMaxIntDigits digits), without leading zeros.
Expr naturalRange(uint64_t a, std::optional<uint64_t> b) {
    if (b && a > *b) return nothing();
    std::string as = std::to_string(a);
    size_t la = as.size();
    size_t lb = b ? std::to_string(*b).size() : size_t(kMaxIntDigits);
    std::vector<Expr> alts;
    for (size_t len = la; len <= lb; ++len) {
        if (!b && len > la) {
            // Every longer length up to the cap.
            alts.push_back(seq({cls('1', '9'), digits(int64_t(la), kMaxIntDigits - 1)}));
            break;
        }
        std::string lo = len == la ? as : "1" + std::string(len - 1, '0');
        std::string hi = b && len == lb ? std::to_string(*b) : std::string(len, '9');
        alts.push_back(sameLength(lo, hi));
    }
    return alt(std::move(alts));
}

// Fraction digit strings D (the digits after the point; possibly empty = 0) with 0.D above s
// (>= when incS) and below t (<= when incT). Absent bounds are open; s and t have no trailing
// zeros, so a non-empty one is above zero.
Expr fractionDigits(std::optional<std::string> s, bool incS, std::optional<std::string> t, bool incT,
                    bool nonEmpty) {
    if (s && s->empty() && incS) s.reset(); // >= 0 always holds
    if (t && t->empty()) {                  // 0.D must be zero
        return !s && incT ? rep(lit("0"), nonEmpty ? 1 : 0, kMaxFracDigits) : nothing();
    }
    if (!s && !t) return digits(nonEmpty ? 1 : 0, kMaxFracDigits);
    if (s && s->empty() && !t) // above zero
        return seq({rep(lit("0"), 0, kMaxFracDigits), cls('1', '9'), digits(0, kMaxFracDigits)});
    std::vector<Expr> alts;
    if (!nonEmpty && !s) alts.push_back(empty());
    int sd = s && !s->empty() ? (*s)[0] - '0' : 0;
    int td = t ? (*t)[0] - '0' : 9;
    int runStart = -1;
    auto flush = [&](int end) {
        if (runStart >= 0)
            alts.push_back(seq({cls(uint32_t('0' + runStart), uint32_t('0' + end)),
                                digits(0, kMaxFracDigits)}));
        runStart = -1;
    };
    for (int d = sd; d <= td; ++d) {
        std::optional<std::string> sRest, tRest;
        if (s && d == sd) sRest = s->empty() ? std::string() : s->substr(1);
        if (t && d == td) tRest = t->substr(1);
        if (!sRest && !tRest) {
            if (runStart < 0) runStart = d;
            continue;
        }
        flush(d - 1);
        alts.push_back(seq({lit(std::string(1, char('0' + d))),
                            fractionDigits(sRest, incS, tRest, incT, false)}));
    }
    flush(td);
    return alt(std::move(alts));
}

// "." and fraction digits, or none, within the bounds above.
Expr fraction(std::optional<std::string> s, bool incS, std::optional<std::string> t, bool incT) {
    bool lowOk = !s || (s->empty() && incS);
    bool highOk = !t || !t->empty() || incT;
    return alt({lowOk && highOk ? empty() : nothing(),
                seq({lit("."), fractionDigits(std::move(s), incS, std::move(t), incT, true)})});
}

uint64_t toU64(const std::string& d) { return std::stoull(d); }

// Non-negative decimals m with lo <= m (or <) and m <= hi (or <), written without exponent.
Expr magnitudeRange(const Bound& lo, const std::optional<Bound>& hi) {
    uint64_t ia = toU64(lo.intDigits);
    if (!hi) {
        return alt({seq({lit(lo.intDigits), fraction(lo.fracDigits, lo.inclusive, std::nullopt, true)}),
                    seq({naturalRange(ia + 1, std::nullopt),
                         fraction(std::nullopt, true, std::nullopt, true)})});
    }
    uint64_t ib = toU64(hi->intDigits);
    if (ia > ib) return nothing();
    if (ia == ib)
        return seq({lit(lo.intDigits),
                    fraction(lo.fracDigits, lo.inclusive, hi->fracDigits, hi->inclusive)});
    std::vector<Expr> alts;
    alts.push_back(
        seq({lit(lo.intDigits), fraction(lo.fracDigits, lo.inclusive, std::nullopt, true)}));
    if (ia + 1 <= ib - 1)
        alts.push_back(seq({naturalRange(ia + 1, ib - 1), fraction(std::nullopt, true, std::nullopt, true)}));
    alts.push_back(
        seq({lit(hi->intDigits), fraction(std::nullopt, true, hi->fracDigits, hi->inclusive)}));
    return alt(std::move(alts));
}

bool isZero(const Bound& b) { return b.intDigits == "0" && b.fracDigits.empty(); }

} // namespace

Result<Bound> boundFromJson(double value, bool isInteger, int64_t asInt, const std::string& where) {
    constexpr double kLimit = 1e18;
    Bound b;
    std::string text;
    if (isInteger) {
        if (asInt > int64_t(kLimit) || asInt < -int64_t(kLimit))
            return invalidArgument(where + ": bounds beyond +-1e18 are not supported");
        b.negative = asInt < 0;
        text = std::to_string(asInt < 0 ? -asInt : asInt);
    } else {
        if (!std::isfinite(value) || std::fabs(value) > kLimit)
            return invalidArgument(where + ": bounds beyond +-1e18 are not supported");
        b.negative = value < 0;
        char buf[512];
        auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(value), std::chars_format::fixed);
        if (r.ec != std::errc()) return invalidArgument(where + ": cannot write this bound");
        text.assign(buf, r.ptr);
    }
    size_t dot = text.find('.');
    b.intDigits = text.substr(0, dot);
    if (dot != std::string::npos) b.fracDigits = text.substr(dot + 1);
    while (!b.fracDigits.empty() && b.fracDigits.back() == '0') b.fracDigits.pop_back();
    if (b.fracDigits.size() > size_t(kMaxFracDigits))
        return invalidArgument(where + ": bounds with more than " + std::to_string(kMaxFracDigits) +
                               " decimals are not supported");
    if (isZero(b)) b.negative = false;
    return b;
}

Expr integerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    if (lo && hi && *lo > *hi) return nothing();
    std::vector<Expr> alts;
    if (!lo || *lo < 0) {
        uint64_t from = hi && *hi < 0 ? uint64_t(-*hi) : 1;
        std::optional<uint64_t> to;
        if (lo) to = uint64_t(-*lo);
        alts.push_back(seq({lit("-"), naturalRange(from, to)}));
    }
    if (!hi || *hi >= 0) {
        uint64_t from = lo && *lo > 0 ? uint64_t(*lo) : 0;
        std::optional<uint64_t> to;
        if (hi) to = uint64_t(*hi);
        alts.push_back(naturalRange(from, to));
    }
    return alt(std::move(alts));
}

Expr numberRange(const std::optional<Bound>& lo, const std::optional<Bound>& hi) {
    std::vector<Expr> alts;
    auto magnitude = [](const Bound& b, bool inclusive) {
        Bound m = b;
        m.negative = false;
        m.inclusive = inclusive;
        return m;
    };
    Bound zeroIncl{false, "0", "", true};
    Bound zeroExcl{false, "0", "", false};
    // Negative values: "-" and a magnitude in (|hi| or 0, |lo|].
    if (!lo || (lo->negative && !isZero(*lo))) {
        Bound from = hi && hi->negative ? magnitude(*hi, hi->inclusive) : zeroExcl;
        std::optional<Bound> to;
        if (lo) to = magnitude(*lo, lo->inclusive);
        alts.push_back(seq({lit("-"), magnitudeRange(from, to)}));
    }
    // Values >= 0.
    if (!hi || !hi->negative) {
        Bound from = lo && !lo->negative ? *lo : zeroIncl;
        alts.push_back(magnitudeRange(from, hi));
    }
    return alt(std::move(alts));
}

Result<Expr> formatExpr(const std::string& format, const std::string& where, bool& annotation) {
    annotation = false;
    Expr d = digit();
    auto twoDigit = [&](char first, Expr second) { return seq({lit(std::string(1, first)), second}); };
    auto hour = [&] { return alt({seq({cls('0', '1'), d}), twoDigit('2', cls('0', '3'))}); };
    auto minute = [&] { return seq({cls('0', '5'), d}); };
    auto date = [&] {
        Expr day31 = alt({twoDigit('0', cls('1', '9')), seq({cls('1', '2'), d}), twoDigit('3', cls('0', '1'))});
        Expr day30 = alt({twoDigit('0', cls('1', '9')), seq({cls('1', '2'), d}), lit("30")});
        Expr dayFeb = alt({twoDigit('0', cls('1', '9')), twoDigit('1', d), twoDigit('2', cls('0', '8'))});
        Expr month31 = alt({twoDigit('0', chars("13578")), twoDigit('1', chars("02"))});
        Expr month30 = alt({twoDigit('0', chars("469")), lit("11")});
        Expr monthDay = alt({seq({month31, lit("-"), day31}), seq({month30, lit("-"), day30}),
                             seq({lit("02-"), dayFeb})});
        // Leap years: divisible by 4 and not by 100, or by 400.
        Expr by4 = alt({twoDigit('0', chars("48")), seq({chars("2468"), chars("048")}),
                        seq({chars("13579"), chars("26")})});
        Expr centuryBy4 = alt({twoDigit('0', chars("048")), seq({chars("2468"), chars("048")}),
                               seq({chars("13579"), chars("26")})});
        Expr leap = alt({seq({d, d, by4}), seq({centuryBy4, lit("00")})});
        return alt({seq({digits(4, 4), lit("-"), monthDay}), seq({leap, lit("-02-29")})});
    };
    auto time = [&] {
        Expr offset = alt({lit("Z"), seq({chars("+-"), hour(), lit(":"), minute()})});
        return seq({hour(), lit(":"), minute(), lit(":"), minute(), opt(seq({lit("."), digits(1, 9)})),
                    offset});
    };
    auto label = [&] {
        CharSet alnum = CharSet::of('a', 'z');
        alnum.add('A', 'Z');
        alnum.add('0', '9');
        CharSet inner = alnum;
        inner.add('-', '-');
        return seq({cls(alnum), opt(seq({rep(cls(inner), 0, 61), cls(alnum)}))});
    };
    if (format == "date") return date();
    if (format == "time") return time();
    if (format == "date-time") return seq({date(), lit("T"), time()});
    if (format == "uuid") {
        CharSet h = CharSet::of('0', '9');
        h.add('a', 'f');
        h.add('A', 'F');
        Expr x = cls(h);
        return seq({rep(x, 8, 8), lit("-"), rep(x, 4, 4), lit("-"), rep(x, 4, 4), lit("-"),
                    rep(x, 4, 4), lit("-"), rep(x, 12, 12)});
    }
    if (format == "email") {
        CharSet atext = CharSet::of('a', 'z');
        atext.add('A', 'Z');
        atext.add('0', '9');
        for (char c : std::string("!#$%&'*+/=?^_`{|}~-")) atext.add(uint8_t(c), uint8_t(c));
        Expr atom = rep(cls(atext), 1, 64);
        Expr local = seq({atom, star(seq({lit("."), atom}))});
        CharSet alpha = CharSet::of('a', 'z');
        alpha.add('A', 'Z');
        return seq({local, lit("@"), rep(seq({label(), lit(".")}), 1, -1), rep(cls(alpha), 2, 63)});
    }
    if (format == "hostname") return seq({label(), star(seq({lit("."), label()}))});
    if (format == "ipv4") {
        Expr octet = alt({seq({lit("25"), cls('0', '5')}), seq({lit("2"), cls('0', '4'), d}),
                          seq({lit("1"), d, d}), seq({cls('1', '9'), d}), d});
        return seq({octet, rep(seq({lit("."), octet}), 3, 3)});
    }
    // Formats that only annotate here: the string is unconstrained.
    static const std::set<std::string> kAnnotations = {
        "uri",   "uri-reference", "iri",           "iri-reference", "uri-template",
        "url",   "regex",         "json-pointer",  "relative-json-pointer",
        "byte",  "binary",        "password"};
    if (kAnnotations.count(format)) {
        annotation = true;
        return empty();
    }
    return invalidArgument(where + ": format '" + format + "' is not supported");
}

} // namespace hearth::grammar::schema
