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

Result<bool> tDefined(Interp&, const Value& v, CallArgs&) { return !v.isUndefined(); }
Result<bool> tUndefined(Interp&, const Value& v, CallArgs&) { return v.isUndefined(); }
Result<bool> tNone(Interp&, const Value& v, CallArgs&) { return v.isNone(); }
Result<bool> tBoolean(Interp&, const Value& v, CallArgs&) { return v.isBool(); }
Result<bool> tFalse(Interp&, const Value& v, CallArgs&) { return v.isBool() && !v.boolValue(); }
Result<bool> tTrue(Interp&, const Value& v, CallArgs&) { return v.isBool() && v.boolValue(); }
Result<bool> tInteger(Interp&, const Value& v, CallArgs&) { return v.isInt(); }
Result<bool> tFloat(Interp&, const Value& v, CallArgs&) { return v.isFloat(); }
Result<bool> tNumber(Interp&, const Value& v, CallArgs&) { return v.isNumber(); }
Result<bool> tString(Interp&, const Value& v, CallArgs&) { return v.isString(); }
Result<bool> tMapping(Interp&, const Value& v, CallArgs&) { return v.isDict(); }
Result<bool> tCallable(Interp&, const Value& v, CallArgs&) { return v.isCallable(); }
Result<bool> tEscaped(Interp&, const Value&, CallArgs&) { return false; }

Result<bool> tIterable(Interp&, const Value& v, CallArgs&) {
    return v.isUndefined() || v.isString() || v.isList() || v.isDict() || v.isLoop();
}
Result<bool> tSequence(Interp&, const Value& v, CallArgs&) {
    return v.isString() || v.isDict() || v.isLoop() || (v.isList() && v.flavor() != ListFlavor::Generator);
}

Result<bool> parity(const Value& v, bool wantOdd) {
    if (v.isInt() || v.isBool()) return ((v.intValue() % 2) != 0) == wantOdd;
    if (v.isFloat()) {
        const double r = std::fmod(std::fabs(v.numberValue()), 2.0);
        return wantOdd ? r == 1.0 : r == 0.0;
    }
    if (v.isUndefined()) return undefinedError(v);
    return invalidArgument("unsupported operand type(s) for %: '" + typeName(v) + "' and 'int'");
}
Result<bool> tOdd(Interp&, const Value& v, CallArgs&) { return parity(v, true); }
Result<bool> tEven(Interp&, const Value& v, CallArgs&) { return parity(v, false); }

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

Result<bool> tLower(Interp&, const Value& v, CallArgs&) {
    const std::string s = toStr(v);
    return pyLower(s) == s;
}
Result<bool> tUpper(Interp&, const Value& v, CallArgs&) {
    const std::string s = toStr(v);
    return pyUpper(s) == s;
}

Result<bool> tFilter(Interp&, const Value& v, CallArgs&) { return v.isString() && findFilter(v.str()) != nullptr; }
Result<bool> tTest(Interp&, const Value& v, CallArgs&) { return v.isString() && findTest(v.str()) != nullptr; }

struct TestEntry {
    const char* name;
    TestFn fn;
};

const TestEntry kTests[] = {
    {"defined", tDefined}, {"undefined", tUndefined}, {"none", tNone}, {"boolean", tBoolean},
    {"false", tFalse}, {"true", tTrue}, {"integer", tInteger}, {"float", tFloat}, {"number", tNumber},
    {"string", tString}, {"mapping", tMapping}, {"iterable", tIterable}, {"sequence", tSequence},
    {"callable", tCallable}, {"odd", tOdd}, {"even", tEven}, {"divisibleby", tDivisibleBy},
    {"eq", tEq}, {"equalto", tEq}, {"==", tEq}, {"ne", tNe}, {"!=", tNe},
    {"lt", tOrder<0>}, {"lessthan", tOrder<0>}, {"<", tOrder<0>}, {"le", tOrder<1>}, {"<=", tOrder<1>},
    {"gt", tOrder<2>}, {"greaterthan", tOrder<2>}, {">", tOrder<2>}, {"ge", tOrder<3>}, {">=", tOrder<3>},
    {"in", tIn}, {"sameas", tSameAs}, {"lower", tLower}, {"upper", tUpper}, {"escaped", tEscaped},
    {"filter", tFilter}, {"test", tTest},
};

} // namespace

TestFn findTest(std::string_view name) {
    for (const TestEntry& e : kTests)
        if (name == e.name) return e.fn;
    return nullptr;
}

} // namespace hearth::tmpl
