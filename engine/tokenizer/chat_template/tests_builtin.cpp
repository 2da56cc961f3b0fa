// Builtin tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...) with Jinja2's semantics.
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <cmath>

namespace hearth::tmpl {

namespace {

Result<Value> oneArg(std::string_view name, CallArgs& args) {
    if (args.positional.size() + args.keyword.size() != 1)
        return invalidArgument("test '" + std::string(name) + "' takes exactly one argument");
    return args.positional.empty() ? args.keyword[0].second : args.positional[0];
}

// Tests without arguments: extra arguments are an error, as in Python.
Status expectNoArgs(std::string_view name, const CallArgs& args) {
    if (args.positional.empty() && args.keyword.empty()) return Status::ok();
    return invalidArgument("test_" + std::string(name) + "() takes 1 positional argument but " +
                           std::to_string(1 + args.positional.size() + args.keyword.size()) + " were given");
}

bool isDefined(const Value& v) { return !v.isUndefined(); }
bool isUndefinedValue(const Value& v) { return v.isUndefined(); }
bool isNoneValue(const Value& v) { return v.isNone(); }
bool isBoolean(const Value& v) { return v.isBool(); }
bool isFalse(const Value& v) { return v.isBool() && !v.boolValue(); }
bool isTrue(const Value& v) { return v.isBool() && v.boolValue(); }
bool isInteger(const Value& v) { return v.isInt(); }
bool isFloatValue(const Value& v) { return v.isFloat(); }
bool isNumber(const Value& v) { return v.isNumber(); }
bool isStringValue(const Value& v) { return v.isString(); }
bool isMapping(const Value& v) { return v.isDict(); }
bool isCallableValue(const Value& v) { return v.isCallable() || v.isUndefined(); } // Undefined has __call__
bool isEscaped(const Value& v) { return v.isMarkup(); } // has __html__
bool isIterable(const Value& v) { return v.isUndefined() || v.isString() || v.isList() || v.isDict() || v.isLoop(); }
bool isSequence(const Value& v) {
    return v.isUndefined() || v.isString() || v.isDict() || v.isLoop() || isSequenceList(v);
}
// str.islower() / str.isupper(): at least one cased character, none of the other case.
bool caseTest(const Value& v, bool upper) {
    const std::string s = toStr(v);
    bool cased = false;
    for (size_t i = 0; i < s.size();) {
        Utf8Char c = decodeUtf8(s, i);
        i += c.len;
        if (!c.valid) continue;
        if (upper ? isLowerCp(c.cp) : isUpperCp(c.cp)) return false;
        cased = cased || isCased(c.cp);
    }
    return cased;
}
bool isLowerValue(const Value& v) { return caseTest(v, false); }
bool isUpperValue(const Value& v) { return caseTest(v, true); }
bool isFilterName(const Value& v) { return v.isString() && findFilter(v.str()) != nullptr; }
bool isTestName(const Value& v) { return v.isString() && findTest(v.str()) != nullptr; }

template <bool (*Pred)(const Value&)> Result<bool> simple(Interp&, const Value& v, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(expectNoArgs("test", args));
    return Pred(v);
}

// Jinja's odd/even: value % 2 == 1 (or 0), whatever % means for the value.
template <bool Odd> Result<bool> parity(Interp& interp, const Value& v, CallArgs& args) {
    HEARTH_RETURN_IF_ERROR(expectNoArgs(Odd ? "odd" : "even", args));
    HEARTH_ASSIGN_OR_RETURN(Value r, binaryOp(interp, BinaryOp::Mod, v, Value::integer(2)));
    return equals(r, Value::integer(Odd ? 1 : 0));
}

Result<bool> tDivisibleBy(Interp& interp, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value n, oneArg("divisibleby", args));
    HEARTH_ASSIGN_OR_RETURN(Value r, binaryOp(interp, BinaryOp::Mod, v, n));
    return equals(r, Value::integer(0));
}

Result<bool> tEq(Interp&, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value other, oneArg("eq", args));
    return equals(v, other);
}
Result<bool> tNe(Interp&, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value other, oneArg("ne", args));
    return !equals(v, other);
}

template <int Op> Result<bool> tOrder(Interp&, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value other, oneArg("comparison", args));
    if (v.isUndefined()) return undefinedError(v);
    if (other.isUndefined()) return undefinedError(other);
    HEARTH_ASSIGN_OR_RETURN(int c, compareValues(v, other));
    if (c == 2) return false;
    switch (Op) {
    case 0: return c < 0;
    case 1: return c <= 0;
    case 2: return c > 0;
    default: return c >= 0;
    }
}

Result<bool> tIn(Interp&, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value seq, oneArg("in", args));
    return containsValue(seq, v);
}

Result<bool> tSameAs(Interp&, const Value& v, CallArgs& args) {
    HEARTH_ASSIGN_OR_RETURN(Value other, oneArg("sameas", args));
    return v.sameAs(other);
}

struct TestEntry {
    const char* name;
    TestFn fn;
};

const TestEntry kTests[] = {
    {"defined", simple<isDefined>}, {"undefined", simple<isUndefinedValue>}, {"none", simple<isNoneValue>},
    {"boolean", simple<isBoolean>}, {"false", simple<isFalse>}, {"true", simple<isTrue>},
    {"integer", simple<isInteger>}, {"float", simple<isFloatValue>}, {"number", simple<isNumber>},
    {"string", simple<isStringValue>}, {"mapping", simple<isMapping>}, {"iterable", simple<isIterable>},
    {"sequence", simple<isSequence>}, {"callable", simple<isCallableValue>}, {"escaped", simple<isEscaped>},
    {"lower", simple<isLowerValue>}, {"upper", simple<isUpperValue>}, {"filter", simple<isFilterName>},
    {"test", simple<isTestName>}, {"odd", parity<true>}, {"even", parity<false>}, {"divisibleby", tDivisibleBy},
    {"eq", tEq}, {"equalto", tEq}, {"==", tEq}, {"ne", tNe}, {"!=", tNe},
    {"lt", tOrder<0>}, {"lessthan", tOrder<0>}, {"<", tOrder<0>}, {"le", tOrder<1>}, {"<=", tOrder<1>},
    {"gt", tOrder<2>}, {"greaterthan", tOrder<2>}, {">", tOrder<2>}, {"ge", tOrder<3>}, {">=", tOrder<3>},
    {"in", tIn}, {"sameas", tSameAs},
};

} // namespace

TestFn findTest(std::string_view name) {
    for (const TestEntry& e : kTests)
        if (name == e.name) return e.fn;
    return nullptr;
}

} // namespace hearth::tmpl
