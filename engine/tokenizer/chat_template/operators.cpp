// Python operator semantics for template values: arithmetic, `in`, iteration, len(), attribute and
// item access (Jinja's sandboxed getattr/getitem) and slicing.
#include "tokenizer/chat_template/interp.h"
#include "tokenizer/chat_template/text_util.h"

#include <cmath>

namespace hearth::tmpl {

namespace {

// Jinja's object_type_repr: "None" or "dict object".
std::string objectTypeRepr(const Value& v) {
    if (v.isNone()) return "None";
    return typeName(v) + " object";
}

Value missingAttribute(const Value& obj, const std::string& name) {
    return Value::undefined("'" + objectTypeRepr(obj) + "' has no attribute '" + name + "'");
}

Value missingElement(const Value& obj, const Value& key) {
    return Value::undefined(objectTypeRepr(obj) + " has no element " + repr(key));
}

Status unsupported(const char* op, const Value& a, const Value& b) {
    return invalidArgument(std::string("unsupported operand type(s) for ") + op + ": '" + typeName(a) + "' and '" +
                           typeName(b) + "'");
}

Status overflow() { return outOfRange("integer result does not fit in 64 bits"); }

bool isIntLike(const Value& v) { return v.isInt() || v.isBool(); }

// Python's floor modulo for integers / floats.
int64_t floorMod(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
double floorModF(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    if (r == 0) r = std::copysign(0.0, b);
    return r;
}

Result<Value> repeatSequence(Interp& interp, const Value& seq, int64_t times) {
    if (times < 0) times = 0;
    if (seq.isString()) {
        const size_t unit = seq.str().size();
        if (unit && static_cast<uint64_t>(times) > interp.limits().maxOutputBytes / unit + 1)
            return outOfRange("template built a string larger than the output limit");
        HEARTH_RETURN_IF_ERROR(interp.checkSize(unit * static_cast<size_t>(times)));
        std::string out;
        out.reserve(unit * static_cast<size_t>(times));
        for (int64_t i = 0; i < times; ++i) out += seq.str();
        return withMarkup(Value::string(std::move(out)), seq.isMarkup());
    }
    const size_t unit = seq.items().size();
    if (unit && static_cast<uint64_t>(times) > interp.limits().maxContainerItems / unit + 1)
        return outOfRange("template built a list larger than the container limit");
    HEARTH_RETURN_IF_ERROR(interp.checkItems(unit * static_cast<size_t>(times)));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    return Value::list(std::move(out), seq.flavor());
}

Result<Value> intPow(int64_t base, int64_t exp) {
    if (exp < 0) {
        if (base == 0) return invalidArgument("0.0 cannot be raised to a negative power");
        return Value::floating(std::pow(static_cast<double>(base), static_cast<double>(exp)));
    }
    int64_t result = 1;
    int64_t b = base;
    while (exp > 0) {
        if (exp & 1) {
            if (__builtin_mul_overflow(result, b, &result)) return overflow();
        }
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(b, b, &b)) return overflow();
    }
    return Value::integer(result);
}

} // namespace

Status undefinedError(const Value& v) {
    const std::string& hint = v.undefinedHint();
    return invalidArgument(hint.empty() ? std::string("value is undefined") : hint);
}

Result<Value> unaryOp(UnaryOp op, const Value& a) {
    if (op == UnaryOp::Not) return Value::boolean(!truthy(a));
    if (a.isUndefined()) return undefinedError(a);
    if (a.isFloat()) return Value::floating(op == UnaryOp::Neg ? -a.numberValue() : a.numberValue());
    if (isIntLike(a)) {
        if (op == UnaryOp::Pos) return Value::integer(a.intValue());
        if (a.intValue() == INT64_MIN) return overflow();
        return Value::integer(-a.intValue());
    }
    return invalidArgument(std::string("bad operand type for unary ") + (op == UnaryOp::Neg ? "-" : "+") + ": '" +
                           typeName(a) + "'");
}

Result<Value> binaryOp(Interp& interp, BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::Concat) {
        std::string s = toStr(a);
        std::string t = toStr(b);
        HEARTH_RETURN_IF_ERROR(interp.checkSize(s.size() + t.size()));
        return Value::string(s + t);
    }
    if (a.isUndefined()) return undefinedError(a);
    if (op == BinaryOp::Mod && a.isString()) {
        HEARTH_ASSIGN_OR_RETURN(std::string s, percentFormat(interp, a.str(), b, a.isMarkup()));
        return withMarkup(Value::string(std::move(s)), a.isMarkup());
    }
    if (b.isUndefined()) return undefinedError(b);
    const bool numbers = a.isNumber() && b.isNumber();
    const bool floats = numbers && (a.isFloat() || b.isFloat());
    switch (op) {
    case BinaryOp::Add:
        if (floats) return Value::floating(a.numberValue() + b.numberValue());
        if (numbers) {
            int64_t r;
            if (__builtin_add_overflow(a.intValue(), b.intValue(), &r)) return overflow();
            return Value::integer(r);
        }
        if (a.isString()) {
            if (!b.isString()) {
                if (a.isMarkup()) return unsupported("+", a, b);
                return invalidArgument("can only concatenate str (not \"" + typeName(b) + "\") to str");
            }
            HEARTH_RETURN_IF_ERROR(interp.checkSize(a.str().size() + b.str().size()));
            if (a.isMarkup() || b.isMarkup()) // Markup escapes the plain side
                return Value::markup((a.isMarkup() ? a.str() : htmlEscape(a.str())) +
                                     (b.isMarkup() ? b.str() : htmlEscape(b.str())));
            return Value::string(a.str() + b.str());
        }
        if (isSequenceList(a)) {
            if (!isSequenceList(b) || b.flavor() != a.flavor())
                return invalidArgument("can only concatenate " + typeName(a) + " (not \"" + typeName(b) + "\") to " +
                                       typeName(a));
            HEARTH_RETURN_IF_ERROR(interp.checkItems(a.items().size() + b.items().size()));
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            return Value::list(std::move(items), a.flavor());
        }
        return unsupported("+", a, b);
    case BinaryOp::Sub:
        if (floats) return Value::floating(a.numberValue() - b.numberValue());
        if (numbers) {
            int64_t r;
            if (__builtin_sub_overflow(a.intValue(), b.intValue(), &r)) return overflow();
            return Value::integer(r);
        }
        return unsupported("-", a, b);
    case BinaryOp::Mul:
        if (floats) return Value::floating(a.numberValue() * b.numberValue());
        if (numbers) {
            int64_t r;
            if (__builtin_mul_overflow(a.intValue(), b.intValue(), &r)) return overflow();
            return Value::integer(r);
        }
        if ((a.isString() || isSequenceList(a)) && isIntLike(b))
            return repeatSequence(interp, a, b.intValue());
        if ((b.isString() || isSequenceList(b)) && isIntLike(a))
            return repeatSequence(interp, b, a.intValue());
        if (a.isString() || isSequenceList(a) || b.isString() || isSequenceList(b))
            return invalidArgument("can't multiply sequence by non-int of type '" +
                                   typeName(a.isString() || isSequenceList(a) ? b : a) + "'");
        return unsupported("*", a, b);
    case BinaryOp::Div:
        if (numbers) {
            if (b.numberValue() == 0) return invalidArgument("division by zero");
            return Value::floating(a.numberValue() / b.numberValue());
        }
        return unsupported("/", a, b);
    case BinaryOp::FloorDiv:
        if (floats) {
            if (b.numberValue() == 0) return invalidArgument("float floor division by zero");
            return Value::floating(std::floor(a.numberValue() / b.numberValue()));
        }
        if (numbers) {
            const int64_t x = a.intValue(), y = b.intValue();
            if (y == 0) return invalidArgument("integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) return overflow();
            int64_t q = x / y;
            if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
            return Value::integer(q);
        }
        return unsupported("//", a, b);
    case BinaryOp::Mod:
        if (floats) {
            if (b.numberValue() == 0) return invalidArgument("float modulo");
            return Value::floating(floorModF(a.numberValue(), b.numberValue()));
        }
        if (numbers) {
            if (b.intValue() == 0) return invalidArgument("integer modulo by zero");
            if (b.intValue() == -1) return Value::integer(0);
            return Value::integer(floorMod(a.intValue(), b.intValue()));
        }
        return unsupported("%", a, b);
    case BinaryOp::Pow:
        if (numbers && !floats) return intPow(a.intValue(), b.intValue());
        if (numbers) {
            const double x = a.numberValue(), y = b.numberValue();
            if (x == 0 && y < 0) return invalidArgument("0.0 cannot be raised to a negative power");
            if (x < 0 && y != std::floor(y)) return unsupported("** (complex result)", a, b);
            return Value::floating(std::pow(x, y));
        }
        return unsupported("** or pow()", a, b);
    default: break;
    }
    return internalError("unknown binary operator");
}

Result<bool> containsValue(const Value& container, const Value& item) {
    switch (container.kind()) {
    case Kind::Undefined: return false;
    case Kind::String:
        if (!item.isString())
            return invalidArgument("'in <string>' requires string as left operand, not " + typeName(item));
        return container.str().find(item.str()) != std::string::npos;
    case Kind::List: {
        const ListData& l = container.listData();
        if (l.flavor == ListFlavor::Generator) {
            if (l.consumed) return false;
            l.consumed = true;
        }
        for (const Value& v : l.items)
            if (equals(v, item)) return true;
        return false;
    }
    case Kind::Dict: {
        std::string key;
        if (item.isUndefined()) return false; // hashable, and never a key of input data
        if (!dictKey(item, key)) return invalidArgument("unhashable type: '" + typeName(item) + "'");
        return container.dictData().find(item) != nullptr;
    }
    default: return invalidArgument("argument of type '" + typeName(container) + "' is not iterable");
    }
}

Result<std::vector<Value>> iterateValue(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined: return std::vector<Value>{};
    case Kind::List: {
        const ListData& l = v.listData();
        if (l.flavor == ListFlavor::Generator) {
            if (l.consumed) return std::vector<Value>{};
            l.consumed = true;
        }
        return l.items;
    }
    case Kind::Dict: {
        std::vector<Value> keys;
        keys.reserve(v.dictData().entries.size());
        for (const auto& [k, val] : v.dictData().entries) keys.push_back(k);
        return keys;
    }
    case Kind::String: {
        std::vector<Value> chars;
        const std::string& s = v.str();
        for (size_t i = 0; i < s.size();) {
            const size_t len = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : decodeUtf8(s, i).len;
            chars.push_back(Value::string(s.substr(i, len)));
            i += len;
        }
        return chars;
    }
    case Kind::Loop: {
        const auto& items = v.loopData().items;
        return items ? items->items : std::vector<Value>{};
    }
    default: return invalidArgument("'" + typeName(v) + "' object is not iterable");
    }
}

Result<int64_t> lengthOf(const Value& v) {
    switch (v.kind()) {
    case Kind::Undefined: return int64_t(0);
    case Kind::String: return static_cast<int64_t>(utf8Length(v.str()));
    case Kind::List:
        if (v.flavor() == ListFlavor::Generator) return invalidArgument("object of type 'generator' has no len()");
        return static_cast<int64_t>(v.items().size());
    case Kind::Dict: return static_cast<int64_t>(v.dictData().entries.size());
    case Kind::Loop: return static_cast<int64_t>(v.loopData().items ? v.loopData().items->items.size() : 0);
    default: return invalidArgument("object of type '" + typeName(v) + "' has no len()");
    }
}

Result<Value> getAttribute(const Value& obj, const std::string& name) {
    Value method;
    switch (obj.kind()) {
    case Kind::Undefined: return undefinedError(obj);
    case Kind::Dict:
        if (findMethod(obj, name, method)) return method;
        if (const Value* v = obj.dictData().find(std::string_view(name))) return *v;
        return missingAttribute(obj, name);
    case Kind::String:
    case Kind::List:
        if (findMethod(obj, name, method)) return method;
        return missingAttribute(obj, name);
    case Kind::Namespace:
        if (const Value* v = obj.namespaceData().find(name)) return *v;
        return missingAttribute(obj, name);
    case Kind::Loop: return loopAttribute(obj, name);
    default: return missingAttribute(obj, name);
    }
}

Result<Value> getItem(const Value& obj, const Value& key) {
    if (obj.isUndefined()) return undefinedError(obj);
    if (isIntLike(key)) {
        int64_t i = key.intValue();
        if (isSequenceList(obj)) {
            const auto n = static_cast<int64_t>(obj.items().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) return missingElement(obj, key);
            return obj.items()[static_cast<size_t>(i)];
        }
        if (obj.isString()) {
            const std::string& s = obj.str();
            if (isAscii(s)) {
                const auto n = static_cast<int64_t>(s.size());
                if (i < 0) i += n;
                if (i < 0 || i >= n) return missingElement(obj, key);
                return withMarkup(Value::string(s.substr(static_cast<size_t>(i), 1)), obj.isMarkup());
            }
            std::vector<size_t> off = utf8Offsets(s);
            const auto n = static_cast<int64_t>(off.size() - 1);
            if (i < 0) i += n;
            if (i < 0 || i >= n) return missingElement(obj, key);
            const auto k = static_cast<size_t>(i);
            return withMarkup(Value::string(s.substr(off[k], off[k + 1] - off[k])), obj.isMarkup());
        }
    }
    if (obj.isDict()) {
        if (const Value* v = obj.dictData().find(key)) return *v;
    }
    if (key.isString()) return getAttribute(obj, key.str());
    return missingElement(obj, key);
}

Result<Value> sliceValue(Interp& interp, const Value& obj, const Value& startV, const Value& stopV, const Value& stepV) {
    // Jinja compiles slices to plain Python subscripts, so type errors are not softened here.
    const bool sliceable = obj.isString() || isSequenceList(obj);
    if (obj.isDict()) return invalidArgument("unhashable type: 'slice'");
    if (!sliceable) return invalidArgument("'" + typeName(obj) + "' object is not subscriptable");
    for (const Value* v : {&startV, &stopV, &stepV}) {
        if (!v->isNone() && !isIntLike(*v))
            return invalidArgument("slice indices must be integers or None or have an __index__ method");
    }
    const int64_t step = stepV.isNone() ? 1 : stepV.intValue();
    if (step == 0) return invalidArgument("slice step cannot be zero");
    std::vector<size_t> offsets;
    int64_t len;
    if (obj.isString()) {
        if (isAscii(obj.str())) {
            len = static_cast<int64_t>(obj.str().size());
        } else {
            offsets = utf8Offsets(obj.str());
            len = static_cast<int64_t>(offsets.size() - 1);
        }
    } else {
        len = static_cast<int64_t>(obj.items().size());
    }
    auto adjust = [&](const Value& v, int64_t def, bool isStart) {
        if (v.isNone()) return def;
        int64_t x = v.intValue();
        if (x < 0) {
            x = (x < -len) ? (step > 0 ? 0 : -1) : x + len;
        } else if (x >= len) {
            x = step > 0 ? len : len - 1;
        }
        (void)isStart;
        return x;
    };
    const int64_t start = adjust(startV, step > 0 ? 0 : len - 1, true);
    const int64_t stop = adjust(stopV, step > 0 ? len : -1, false);
    std::vector<int64_t> indices;
    if (step > 0) {
        for (int64_t i = start; i < stop; i += step) indices.push_back(i);
    } else {
        for (int64_t i = start; i > stop; i += step) indices.push_back(i);
    }
    HEARTH_RETURN_IF_ERROR(interp.charge(indices.size()));
    if (obj.isString()) {
        const std::string& s = obj.str();
        std::string out;
        if (offsets.empty()) {
            if (step == 1)
                return withMarkup(Value::string(start < stop ? s.substr(static_cast<size_t>(start), static_cast<size_t>(stop - start))
                                                             : std::string()),
                                  obj.isMarkup());
            for (int64_t i : indices) out.push_back(s[static_cast<size_t>(i)]);
        } else {
            for (int64_t i : indices) {
                const auto k = static_cast<size_t>(i);
                out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
            }
        }
        return withMarkup(Value::string(std::move(out)), obj.isMarkup());
    }
    std::vector<Value> out;
    out.reserve(indices.size());
    for (int64_t i : indices) out.push_back(obj.items()[static_cast<size_t>(i)]);
    return Value::list(std::move(out), obj.flavor());
}

} // namespace hearth::tmpl
