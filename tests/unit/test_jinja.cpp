// Interpreter tests of the chat-template engine: a table of small templates whose expected output
// (or expected failure) was taken from Python Jinja2 in transformers' environment. Covers the
// whitespace-control matrix, scoping, loops, slices, Python value printing and arithmetic, string
// and dict methods, filters, tests, macros, call blocks, globals and tojson formatting.
#include "hearth/chat_template.h"

#include <QtTest>

#include <nlohmann/json.hpp>

using namespace hearth;

namespace {

struct Case {
    const char* name;
    const char* source;
    const char* variables; // JSON object
    const char* expected;  // output; for a failure, the raise_exception message or ""
    bool fails;
};

// clang-format off
// whitespace control, scoping, loops, slices and indexing
const Case kWsCases[] = {
    {"ws_trim_block", "{% if true %}\nA\n{% endif %}\nB", "{}", "A\nB", false},
    {"ws_lstrip_block", "  {% if true %}\n  A\n  {% endif %}\nB", "{}", "  A\nB", false},
    {"ws_lstrip_not_var", "  {{ 1 }}\n  {{ 2 }}", "{}", "  1\n  2", false},
    {"ws_text_before_tag_kept", "x  {% if true %}y{% endif %}", "{}", "x  y", false},
    {"ws_minus_left", "a \n\t {%- if true %}b{% endif %}", "{}", "ab", false},
    {"ws_minus_right", "{% if true -%} \n\n b{% endif %}", "{}", "b", false},
    {"ws_var_minus", "a  {{- 'x' -}}  \n b", "{}", "axb", false},
    {"ws_plus_left", "a\n  {%+ if true %}b{% endif %}", "{}", "a\n  b", false},
    {"ws_plus_right", "{% if true +%}\nb{% endif %}", "{}", "\nb", false},
    {"ws_comment_trim", "{# c #}\n  {# d #}\nz", "{}", "z", false},
    {"ws_comment_minus", "a  {#- c -#}  b", "{}", "ab", false},
    {"ws_trailing_newline_dropped", "x\n", "{}", "x", false},
    {"ws_only_one_trailing_newline", "x\n\n", "{}", "x\n", false},
    {"ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", "{}", "a\nb\nc", false},
    {"ws_raw", "{% raw %}{{ x }}{% if %}{% endraw %}", "{}", "{{ x }}{% if %}", false},
    {"ws_raw_trim", "{% raw %}\nX{% endraw %}\nY", "{}", "\nXY", false},
    {"ws_raw_minus", "a {%- raw -%}  X  {%- endraw -%} b", "{}", "aXb", false},
    {"ws_for_lines", "{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n", "{}", "  1\n  2\n", false},
    {"ws_var_no_trim", "{{ 1 }}\n{{ 2 }}\n", "{}", "1\n2", false},
    {"ws_block_after_var_line", "{{ 'a' }}  {% if true %}\nb{% endif %}", "{}", "a  b", false},
    {"ws_start_of_template", "   {% if true %}x{% endif %}", "{}", "x", false},
    {"ws_tab_lstrip", "\t\t{% if true %}x{% endif %}", "{}", "x", false},
    {"ws_generation", "{% generation %}\n  G\n{% endgeneration %}", "{}", "  G\n", false},
    {"scope_for_no_leak", "{% set x = 0 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", "{}", "012|0", false},
    {"scope_for_fresh_iteration", "{% for i in range(3) %}{{ y }}{% set y = i %}{{ y }}{% endfor %}|{{ y }}", "{}", "012|", false},
    {"scope_if_leaks", "{% if true %}{% set q = 3 %}{% endif %}{{ q }}", "{}", "3", false},
    {"scope_namespace", "{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}", "{}", "6", false},
    {"scope_namespace_empty", "{% set ns = namespace() %}{% set ns.a = 'x' %}{{ ns.a }}", "{}", "x", false},
    {"scope_rebind_input", "{% set messages = messages[1:] %}{{ messages|length }}", "{\"messages\": [1, 2, 3]}", "2", false},
    {"scope_macro_sees_later_global", "{% macro m() %}{{ z }}{% endmacro %}{% set z = 5 %}{{ m() }}", "{}", "5", false},
    {"scope_macro_in_loop", "{% for i in [1, 2] %}{% macro m() %}<{{ i }}>{% endmacro %}{{ m() }}{% endfor %}", "{}", "<1><2>", false},
    {"scope_macro_no_caller_locals", "{% macro m() %}[{{ i }}]{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}", "{}", "[]", false},
    {"scope_with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", "{}", "3[]", false},
    {"scope_set_block", "{% set x %}  hi {{ 1 + 1 }}{% endset %}[{{ x }}]", "{}", "[  hi 2]", false},
    {"scope_set_block_filter", "{% set x | upper %}abc{% endset %}{{ x }}", "{}", "ABC", false},
    {"scope_set_tuple", "{% set a, b = [1, 2] %}{{ b }}{{ a }}", "{}", "21", false},
    {"scope_loop_var_after_loop", "{% for i in [1,2] %}{% endfor %}[{{ i }}]", "{}", "[]", false},
    {"scope_nested_loops_outer", "{% for a in [1,2] %}{% set outer = loop %}{% for b in [3,4] %}{{ outer.index }}{{ loop.index }} {% endfor %}{% endfor %}", "{}", "11 12 21 22 ", false},
    {"loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", "{}", "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;", false},
    {"loop_prev_next", "{% for x in [1,2,3] %}{{ loop.previtem|default('-') }}{{ x }}{{ loop.nextitem|default('-') }} {% endfor %}", "{}", "-12 123 23- ", false},
    {"loop_cycle", "{% for x in range(5) %}{{ loop.cycle('a','b') }}{% endfor %}", "{}", "ababa", false},
    {"loop_changed", "{% for x in [1,1,2,2,1] %}{{ loop.changed(x) }} {% endfor %}", "{}", "True False True False True ", false},
    {"loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}", "{}", "empty", false},
    {"loop_else_undefined", "{% for x in nothing %}x{% else %}E{% endfor %}", "{}", "E", false},
    {"loop_break_continue", "{% for i in range(10) %}{% if i is odd %}{% continue %}{% endif %}{% if i > 6 %}{% break %}{% endif %}{{ i }}{% endfor %}", "{}", "0246", false},
    {"loop_filter", "{% for i in range(10) if i % 3 == 0 %}{{ i }}:{{ loop.index }}/{{ loop.length }} {% endfor %}", "{}", "0:1/4 3:2/4 6:3/4 9:4/4 ", false},
    {"loop_unpack_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"b\": 1, \"a\": 2, \"c\": 3}}", "b=1;a=2;c=3;", false},
    {"loop_unpack_filter_items", "{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"z\": 1, \"y\": [1]}}", "z=1;y=[1];", false},
    {"loop_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"x\": 1, \"y\": 2}}", "xy", false},
    {"loop_string_unicode", "{% for c in 'héllo😀' %}[{{ c }}]{% endfor %}", "{}", "[h][é][l][l][o][😀]", false},
    {"loop_unpack_string", "{% for a, b in ['xy', 'zw'] %}{{ b }}{{ a }}{% endfor %}", "{}", "yxwz", false},
    {"loop_nested_break", "{% for a in [1,2] %}{% for b in [1,2,3] %}{% if b == 2 %}{% break %}{% endif %}{{ a }}{{ b }} {% endfor %}{% endfor %}", "{}", "11 21 ", false},
    {"loop_break_in_set_block", "{% for i in [1,2] %}{% set x %}{% break %}{% endset %}{{ i }}{% endfor %}", "{}", "", false},
    {"loop_over_none_error", "{% for x in none %}{% endfor %}", "{}", "", true}, // TypeError: 'NoneType' object is not iterable
    {"loop_unpack_mismatch", "{% for a, b in [[1,2,3]] %}{% endfor %}", "{}", "", true}, // ValueError: too many values to unpack (expected 2)
    {"slice_list", "{{ l[1:] }}{{ l[:-1] }}{{ l[::-1] }}{{ l[::2] }}{{ l[-2:] }}{{ l[1:3] }}{{ l[5:] }}{{ l[-10:2] }}", "{\"l\": [1, 2, 3, 4]}", "[2, 3, 4][1, 2, 3][4, 3, 2, 1][1, 3][3, 4][2, 3][][1, 2]", false},
    {"slice_neg_step", "{{ l[3:0:-1] }}{{ l[-1::-2] }}{{ l[:1:-1] }}", "{\"l\": [1, 2, 3, 4, 5]}", "[4, 3, 2][5, 3, 1][5, 4, 3]", false},
    {"slice_string", "{{ s[1:] }}|{{ s[::-1] }}|{{ s[-1] }}|{{ s[:-1] }}|{{ s[0] }}", "{\"s\": \"a\\u00f1b\\ud83d\\ude00\"}", "ñb😀|😀bña|😀|añb|a", false},
    {"slice_tuple", "{{ (1,2,3)[1:] }}{{ (1,2,3)[::-1] }}", "{}", "(2, 3)(3, 2, 1)", false},
    {"index_negative", "{{ l[-1] }}{{ l[-3] }}[{{ l[-4] }}][{{ l[3] }}]", "{\"l\": [1, 2, 3]}", "31[][]", false},
    {"index_dict", "{{ d['a'] }}{{ d.a }}[{{ d['zz'] }}][{{ d.zz }}]", "{\"d\": {\"a\": 1}}", "11[][]", false},
    {"index_dot_number", "{{ l.0 }}{{ l.1 }}", "{\"l\": [\"x\", \"y\"]}", "xy", false},
    {"index_attr_falls_to_item", "{{ m.role }}:{{ m['content'] }}", "{\"m\": {\"role\": \"user\", \"content\": \"hi\"}}", "user:hi", false},
    {"dict_method_beats_key", "{{ d['items'] }}|{{ d.items()|list }}", "{\"d\": {\"items\": 3}}", "3|[('items', 3)]", false},
    {"slice_step_zero", "{{ [1,2][::0] }}", "{}", "", true}, // ValueError: slice step cannot be zero
    {"slice_bad_index", "{{ l['a':] }}", "{\"l\": [1, 2]}", "", true},
    {"slice_not_sliceable", "{{ n[1:] }}", "{\"n\": 5}", "", true},
    {"slice_dict", "{{ d[1:] }}", "{\"d\": {\"a\": 1}}", "", true},
    {"slice_none", "{{ z[1:] }}", "{\"z\": null}", "", true},
    {"slice_undefined", "{{ u[1:] }}", "{}", "", true},
    {"index_bad_key_type", "[{{ l[n] }}]", "{\"l\": [1], \"n\": \"x\"}", "[]", false},
    {"getitem_on_none", "[{{ none[0] }}][{{ none.x }}][{{ (5)[0] }}]", "{}", "[][][]", false},
};

// values, operators, literals, string and dict methods
const Case kExprCases[] = {
    {"print_scalars", "{{ none }}|{{ true }}|{{ false }}|{{ 1 }}|{{ -0.0 }}|{{ 1.0 }}|{{ 1.5e-5 }}|{{ 1e16 }}|{{ 123456789.125 }}|{{ 0.1 + 0.2 }}", "{}", "None|True|False|1|-0.0|1.0|1.5e-05|1e+16|123456789.125|0.30000000000000004", false},
    {"print_containers", "{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }}|{{ (1,) }}|{{ () }}|{{ (1, 'b') }}|{{ {} }}|{{ [] }}", "{}", "[1, 'a', None, True, 1.5, {'k': 'v'}]|(1,)|()|(1, 'b')|{}|[]", false},
    {"print_string_repr", "{{ [\"it's\", 'a\"b', 'x\\ny', 'tab\\t', 'back\\\\'] }}", "{}", "[\"it's\", 'a\"b', 'x\\ny', 'tab\\t', 'back\\\\']", false},
    {"print_unicode_repr", "{{ ['é', '日本', '\\u200b', '\\xa0', '😀'] }}", "{}", "['é', '日本', '\\u200b', '\\xa0', '😀']", false},
    {"print_json_input", "{{ d }}", "{\"d\": {\"a\": [1, 2.5, null, true], \"b\": \"x\"}}", "{'a': [1, 2.5, None, True], 'b': 'x'}", false},
    {"print_tuple_expr", "{{ 1, 2 }}", "{}", "(1, 2)", false},
    {"print_undefined", "[{{ nope }}][{{ nope is defined }}][{{ nope|length }}][{{ nope|list }}][{{ nope ~ 'x' }}]", "{}", "[][False][0][[]][x]", false},
    {"arith_int", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 6 * 7 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}", "{}", "10 -3 42 3.5 3 -4 1 2 -2 1024 0.5", false},
    {"arith_float", "{{ 1.5 + 1 }} {{ 3 * 0.5 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 10 / 4 }} {{ 2 ** 0.5 }}", "{}", "2.5 1.5 3.0 0.5 2.5 1.4142135623730951", false},
    {"arith_bool", "{{ true + 1 }} {{ false * 3 }} {{ true / 2 }}", "{}", "2 0 0.5", false},
    {"arith_str", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 2 * 'x' }} {{ 'a' ~ 1 ~ none ~ true }} {{ [1] + [2] }} {{ [0] * 3 }}", "{}", "abcd ababab xx a1NoneTrue [1, 2] [0, 0, 0]", false},
    {"arith_unary", "{{ -(3) }} {{ +4 }} {{ - -5 }} {{ -2 ** 2 }} {{ not 0 }} {{ not 'x' }}", "{}", "-3 4 5 4 True False", false},
    {"arith_precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }} {{ 1 + 2 ~ 3 }} {{ 1 ~ 2 * 3 }}", "{}", "", true}, // TypeError: unsupported operand type(s) for +: 'int' and 'str'
    {"err_concat_binds_tighter", "{{ 'a' ~ 1 + 2 }}", "{}", "", true}, // TypeError: can only concatenate str (not "int") to str
    {"arith_filter_precedence", "{{ 'a' + ' b ' | trim }}|{{ -3|abs }}|{{ [1,2]|length + 1 }}", "{}", "ab|3|3", false},
    {"err_str_plus_int", "{{ 'a' + 1 }}", "{}", "", true}, // TypeError: can only concatenate str (not "int") to str
    {"err_int_plus_str", "{{ 1 + 'a' }}", "{}", "", true}, // TypeError: unsupported operand type(s) for +: 'int' and 'str'
    {"err_none_plus_str", "{{ none + 'a' }}", "{}", "", true}, // TypeError: unsupported operand type(s) for +: 'NoneType' and 'str'
    {"err_str_plus_dict", "{{ 'a' + {} }}", "{}", "", true}, // TypeError: can only concatenate str (not "dict") to str
    {"err_div_zero", "{{ 1 / 0 }}", "{}", "", true}, // ZeroDivisionError: division by zero
    {"err_floordiv_zero", "{{ 1 // 0 }}", "{}", "", true}, // ZeroDivisionError: integer division or modulo by zero
    {"err_mod_zero", "{{ 1 % 0 }}", "{}", "", true}, // ZeroDivisionError: integer modulo by zero
    {"err_undefined_plus", "{{ x + 1 }}", "{}", "", true}, // UndefinedError: 'x' is undefined
    {"err_undefined_attr", "{{ x.y }}", "{}", "", true}, // UndefinedError: 'x' is undefined
    {"err_undefined_item", "{{ x[0] }}", "{}", "", true}, // UndefinedError: 'x' is undefined
    {"err_undefined_call", "{{ x() }}", "{}", "", true}, // UndefinedError: 'x' is undefined
    {"err_call_string", "{{ 'a'() }}", "{}", "", true}, // TypeError: 'str' object is not callable
    {"err_neg_str", "{{ -'a' }}", "{}", "", true}, // TypeError: bad operand type for unary -: 'str'
    {"err_compare_types", "{{ 1 < 'a' }}", "{}", "", true}, // TypeError: '<' not supported between instances of 'int' and 'str'
    {"cmp_eq_types", "{{ 1 == 1.0 }} {{ 1 == true }} {{ 0 == false }} {{ '1' == 1 }} {{ none == none }} {{ [1,2] == [1,2] }} {{ (1,2) == [1,2] }} {{ {'a':1,'b':2} == {'b':2,'a':1} }}", "{}", "True True True False True True False True", false},
    {"cmp_chain", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 3 > 2 >= 2 }} {{ 'a' < 'b' }} {{ [1,2] < [1,3] }} {{ 1 != 2 }}", "{}", "True False True True True True", false},
    {"cmp_undefined_eq", "{{ x == y }} {{ x == none }} {{ x != 1 }}", "{}", "True False True", false},
    {"logic_values", "{{ 0 or 'b' }} {{ 'a' and 'b' }} {{ '' and 'b' }}| {{ none or [] }} {{ 1 and 0 }}", "{}", "b b | [] 0", false},
    {"logic_short_circuit", "{{ true or x.y.z }} {{ false and x.y.z }}", "{}", "True False", false},
    {"in_ops", "{{ 'b' in 'abc' }} {{ 'x' in 'abc' }} {{ 2 in [1,2] }} {{ 'k' in {'k':1} }} {{ 3 not in [1] }} {{ 'a' in x }} {{ 1 in (1,2) }}", "{}", "True False True True True False True", false},
    {"in_dict_messages", "{{ 'tool_calls' in m }} {{ 'role' in m }}", "{\"m\": {\"role\": \"user\"}}", "False True", false},
    {"err_in_none", "{{ 'x' in none }}", "{}", "", true}, // TypeError: argument of type 'NoneType' is not iterable
    {"err_int_in_str", "{{ 1 in 'abc' }}", "{}", "", true}, // TypeError: 'in <string>' requires string as left operand, not int
    {"cond_expr", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}] {{ 'a' if 0 else 'b' if 1 else 'c' }}", "{}", "y n [] b", false},
    {"truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, {'a':1}, none, 0.0, 0.1] %}{{ 'T' if v else 'F' }}{% endfor %}", "{}", "FTFTFTFTFFT", false},
    {"string_literals", "{{ 'a\\tb' }}|{{ \"q\\\"q\" }}|{{ 'x\\x41\\u00e9\\U0001F600' }}|{{ 'a' 'b' \"c\" }}|{{ '\\d' }}|{{ '\\101' }}", "{}", "a\tb|q\"q|xAé😀|abc|\\d|A", false},
    {"number_literals", "{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 1E2 }} {{ 00 }}", "{}", "1000 31 15 5 1500.0 100.0 0", false},
    {"dict_literal_order", "{{ {'b': 1, 'a': 2, 1: 'x'} }}", "{}", "{'b': 1, 'a': 2, 1: 'x'}", false},
    {"str_strip", "[{{ '  a b  '.strip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n\\na\\n'.lstrip('\\n') }}][{{ 'a  '.rstrip() }}][{{ '<<a>>'.rstrip('>') }}]", "{}", "[a b][a][a\n][a][<<a]", false},
    {"str_split", "{{ 'a,b,,c'.split(',') }}{{ '  a  b '.split() }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}{{ 'a</think>b</think>c'.split('</think>')[-1] }}", "{}", "['a', 'b', '', 'c']['a', 'b']['a', 'b,c']['a,b', 'c']c", false},
    {"str_splitlines", "{{ 'a\\nb\\r\\nc\\n'.splitlines() }}{{ 'a\\nb'.splitlines(true) }}", "{}", "['a', 'b', 'c']['a\\n', 'b']", false},
    {"str_case", "{{ 'hello wORLD'.upper() }} {{ 'HeLLo'.lower() }} {{ 'hello world-x'.title() }} {{ 'hELLO'.capitalize() }} {{ 'ÉcOLE'.lower() }} {{ 'straße'.upper() }}", "{}", "HELLO WORLD hello Hello World-X Hello école STRASSE", false},
    {"str_startswith", "{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('x') }}", "{}", "True True True False", false},
    {"str_replace", "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }} {{ 'x/no_thinky'.replace('/no_think', '') }}", "{}", "bbb bba -a-b- xy", false},
    {"str_find_count", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'héllo'.find('l') }} {{ 'banana'.count('an') }}", "{}", "2 3 -1 2 2", false},
    {"str_join_format", "{{ ', '.join(['a', 'b']) }} {{ '{} and {}'.format(1, 'x') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{name}!'.format(name='hi') }} {{ '{:>5}|{:<4}|{:^6}|{:05.2f}|{:,}'.format('a', 'b', 'c', 3.14159, 1234567) }}", "{}", "a, b 1 and x aba hi!     a|b   |  c   |03.14|1,234,567", false},
    {"str_percent", "{{ '%s-%d' % ('a', 3) }} {{ '%05.1f' % 2.25 }} {{ '%s' % none }} {{ '%r' % 'q' }} {{ '%(a)s' % {'a': 1} }} {{ '%x %o %%' % (255, 8) }}", "{}", "a-3 002.2 None 'q' 1 ff 10 %", false},
    {"str_misc", "{{ 'ab'.center(6, '*') }} {{ '42'.zfill(5) }} {{ 'abc'.isalpha() }} {{ '12'.isdigit() }} {{ '  '.isspace() }} {{ 'a=b=c'.partition('=') }} {{ 'x.py'.removesuffix('.py') }}", "{}", "**ab** 00042 True True True ('a', '=', 'b=c') x", false},
    {"str_index_out", "[{{ 'abc'[5] }}]", "{}", "[]", false},
    {"str_method_unknown", "[{{ 'abc'.nope }}]", "{}", "[]", false},
    {"dict_methods", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.items()|list }}", "{\"d\": {\"a\": 1, \"b\": 2}}", "['a', 'b'] [1, 2] 1 None 5 [('a', 1), ('b', 2)]", false},
    {"list_methods", "{{ [1,2,2].count(2) }} {{ ['a','b'].index('b') }}", "{}", "2 1", false},
    {"dict_views_print", "{{ d.items() }}|{{ d.keys() }}|{{ d.values() }}|{{ d.items()|length }}|{{ d.keys()|join(',') }}|{{ 'a' in d.keys() }}|{{ d.values() is sequence }}|{{ d.items() is iterable }}", "{\"d\": {\"a\": 1, \"b\": [2]}}", "dict_items([('a', 1), ('b', [2])])|dict_keys(['a', 'b'])|dict_values([1, [2]])|2|a,b|True|False|True", false},
    {"dict_views_index", "[{{ d.keys()[0] }}][{{ (d.items()|list)[0] }}][{{ d.values()|first }}][{{ d.items()|last }}]", "{\"d\": {\"a\": 1, \"b\": 2}}", "[][('a', 1)][1][('b', 2)]", false},
    {"dict_views_tojson_error", "{{ d.items()|tojson }}", "{\"d\": {\"a\": 1}}", "", true}, // TypeError: Object of type dict_items is not JSON serializable
    {"dict_views_empty_falsy", "{{ 'T' if e.items() else 'F' }}{{ 'T' if d.keys() else 'F' }}", "{\"d\": {\"a\": 1}, \"e\": {}}", "FT", false},
};

// filters, tests, macros, call blocks, globals
const Case kFiltersCases[] = {
    {"f_trim_upper_lower", "[{{ '  x  '|trim }}][{{ 'xxaxx'|trim('x') }}][{{ 'aB'|upper }}][{{ 'aB'|lower }}][{{ none|trim }}][{{ 5|string }}]", "{}", "[x][a][AB][ab][None][5]", false},
    {"f_title_capitalize", "{{ 'hello big-world (x) [y] <z> o\\'neil'|title }}|{{ 'hELLO world'|capitalize }}", "{}", "Hello Big-World (X) [Y] <Z> O'neil|Hello world", false},
    {"f_replace", "{{ 'aXbXc'|replace('X', '-') }} {{ 'aaa'|replace('a', 'b', 1) }}", "{}", "a-b-c baa", false},
    {"f_length", "{{ [1,2,3]|length }} {{ 'héllo'|length }} {{ {'a':1}|count }} {{ ''|length }}", "{}", "3 5 1 0", false},
    {"f_join", "{{ [1, 2, 3]|join(', ') }}|{{ ['a','b']|join }}|{{ users|join(', ', attribute='name') }}", "{\"users\": [{\"name\": \"ann\"}, {\"name\": \"bob\"}]}", "1, 2, 3|ab|ann, bob", false},
    {"f_default", "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ ''|d('e', boolean=true) }} {{ 0|default(5) }} {{ x|d }}|", "{}", "d None d e 0 |", false},
    {"f_first_last", "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} [{{ []|first }}]", "{}", "1 3 a []", false},
    {"f_list", "{{ 'ab'|list }} {{ {'a':1,'b':2}|list }} {{ (1,2)|list }}", "{}", "['a', 'b'] ['a', 'b'] [1, 2]", false},
    {"f_items", "{{ {'a':1,'b':[2]}|items|list }}", "{}", "[('a', 1), ('b', [2])]", false},
    {"f_items_undefined", "[{% for k, v in nope|items %}{{ k }}{% endfor %}]", "{}", "[]", false},
    {"f_items_string_error", "{{ 'abc'|items|list }}", "{}", "", true}, // TypeError: Can only get item pairs from a mapping.
    {"f_selectattr", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }}", "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"}, {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [1]}, {\"role\": \"user\", \"content\": \"U2\"}]}", "['U1', 'U2']", false},
    {"f_rejectattr", "{{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|join(',') }}", "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"}, {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [1]}, {\"role\": \"user\", \"content\": \"U2\"}]}", "system,assistant", false},
    {"f_selectattr_defined", "{{ messages|selectattr('tool_calls', 'defined')|list|length }} {{ messages|selectattr('content', 'none')|list|length }} {{ messages|selectattr('content')|list|length }}", "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"}, {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [1]}, {\"role\": \"user\", \"content\": \"U2\"}]}", "1 1 3", false},
    {"f_select_reject", "{{ [1,2,3,4,5]|select('odd')|list }} {{ [1,2,3,4,5]|reject('even')|list }} {{ [0,1,'',2]|select|list }} {{ [1,5,10]|select('gt', 4)|list }} {{ ['a','b']|reject('in', ['a'])|list }}", "{}", "[1, 3, 5] [1, 3, 5] [1, 2] [5, 10] ['b']", false},
    {"f_reject_code_interpreter", "{{ ['brave_search', 'code_interpreter', 'wolfram']|reject('equalto', 'code_interpreter')|join(', ') }}", "{}", "brave_search, wolfram", false},
    {"f_map", "{{ ['a','b']|map('upper')|list }} {{ [1.5, 2.5]|map('int')|list }} {{ users|map(attribute='age', default=0)|list }} {{ ['x ', ' y']|map('trim')|join }}", "{\"users\": [{\"age\": 3}, {}]}", "['A', 'B'] [1, 2] [3, 0] xy", false},
    {"f_map_nested_attr", "{{ calls|map(attribute='function.name')|list }}", "{\"calls\": [{\"function\": {\"name\": \"f\"}}, {\"function\": {\"name\": \"g\"}}]}", "['f', 'g']", false},
    {"f_generator_truthy", "{% if []|select('odd') %}T{% else %}F{% endif %}{% set g = [1,2]|select('odd') %}{{ g|list }}{{ g|list }}", "{}", "T[1][]", false},
    {"f_generator_length_error", "{{ [1,2]|select('odd')|length }}", "{}", "", true}, // TypeError: object of type 'generator' has no len()
    {"f_unique", "{{ [1, 2, 1, 3, 2]|unique|list }} {{ ['a', 'A', 'b']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }}", "{}", "[1, 2, 3] ['a', 'b'] ['a', 'A']", false},
    {"f_sort", "{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ users|sort(attribute='n')|map(attribute='n')|list }}", "{\"users\": [{\"n\": 2}, {\"n\": 1}]}", "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c'] [1, 2]", false},
    {"f_dictsort", "{{ {'b': 1, 'a': 2, 'C': 0}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} {{ {'b': 1, 'a': 2}|dictsort(reverse=true) }}", "{}", "[('a', 2), ('b', 1), ('C', 0)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]", false},
    {"f_reverse", "{{ 'abc😀'|reverse }} {{ [1,2,3]|reverse|list }}", "{}", "😀cba [3, 2, 1]", false},
    {"f_numbers", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 'x'|float }} {{ -3|abs }} {{ -2.5|abs }} {{ '0x1A'|int(0, 16) }}", "{}", "42 4 0 7 3 2.5 0.0 3 2.5 26", false},
    {"f_round", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(method='ceil') }} {{ 2.9|round(0, 'floor') }} {{ 3|round }}", "{}", "2.0 4.0 2.57 3.0 2.0 3", false},
    {"f_sum_min_max", "{{ [1,2,3]|sum }} {{ users|sum(attribute='n') }} {{ [3,1,2]|min }} {{ [3,1,2]|max }} {{ ['b','A']|max }}", "{\"users\": [{\"n\": 2}, {\"n\": 5}]}", "6 7 1 3 b", false},
    {"f_indent", "[{{ 'a\\nb\\n\\nc'|indent }}][{{ 'a\\nb'|indent(2, true) }}][{{ 'a\\n\\nb'|indent(2, blank=true) }}][{{ 'x\\n'|indent('> ') }}]", "{}", "[a\n    b\n\n    c][  a\n  b][a\n  \n  b][x\n]", false},
    {"f_escape", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape }} {{ '<i>'|safe }}", "{}", "&lt;a href=&#34;x&#34;&gt;&amp;&#39;&lt;/a&gt; &lt;b&gt; <i>", false},
    {"f_wordcount_truncate", "{{ 'hello big world'|wordcount }} {{ 'foo bar baz qux'|truncate(9) }} {{ 'foo bar baz qux'|truncate(9, true) }} {{ 'short'|truncate(10) }}", "{}", "3 foo... foo ba... short", false},
    {"f_format", "{{ '%s - %s'|format('a', 1) }} {{ '%(x)s!'|format(x='y') }}", "{}", "a - 1 y!", false},
    {"f_batch_center", "{{ [1,2,3,4,5]|batch(2)|list }} {{ [1,2,3]|batch(2, 0)|list }} [{{ 'ab'|center(6) }}]", "{}", "[[1, 2], [3, 4], [5]] [[1, 2], [3, 0]] [  ab  ]", false},
    {"f_attr", "{% set ns = namespace(a=5) %}{{ ns|attr('a') }} [{{ d|attr('a') }}] {{ d|attr('items') is defined }}", "{\"d\": {\"a\": 1}}", "5 [] True", false},
    {"markup_add_escapes_plain", "{{ 'Use <f>'|safe + t|tojson }}|{{ '<a>' + 'x'|safe }}|{{ ('<b>'|safe) + ('<i>'|safe) }}", "{\"t\": {\"k\": \"v\\\"<\"}}", "Use <f>{&#34;k&#34;: &#34;v\\&#34;&lt;&#34;}|&lt;a&gt;x|<b><i>", false},
    {"markup_concat_tilde_plain", "{{ '<a>'|safe ~ '<b>' }}", "{}", "<a><b>", false},
    {"markup_escape_filters", "{{ '<x>'|e }}|{{ '<x>'|e|e }}|{{ '<x>'|safe|e }}|{{ '<x>'|safe|forceescape }}|{{ '<x>'|e is escaped }}|{{ '<x>' is escaped }}", "{}", "&lt;x&gt;|&lt;x&gt;|<x>|&lt;x&gt;|True|False", false},
    {"markup_methods", "{{ ('a&b'|safe).replace('&', '<&>') }}|{{ ('x'|safe).join(['<', '>']) }}|{{ ('<{}>'|safe).format('<i>') }}|{{ ('  <p> '|safe).strip() }}|{{ ('a,b'|safe).split(',') }}", "{}", "a&lt;&amp;&gt;b|&lt;x&gt;|<&lt;i&gt;>|<p>|[Markup('a'), Markup('b')]", false},
    {"markup_percent", "{{ ('<%s|%d>'|safe) % ('<i>', 5) }}|{{ ('%(a)s'|safe) % {'a': '&'} }}|{{ '<%s>' % ('&'|safe) }}", "{}", "<&lt;i&gt;|5>|&amp;|<&>", false},
    {"markup_filters_keep", "{{ ('<a>'|safe|upper) + '<' }}|{{ ('<a>'|safe|trim) + '<' }}|{{ ('<a>'|safe|string) + '<' }}|{{ ('<a>'|safe|title) + '<' }}|{{ ('<a>'|safe|replace('a', 'b')) + '<' }}", "{}", "<A>&lt;|<a>&lt;|<a>&lt;|<A><|<b><", false},
    {"markup_repr_and_type", "{{ ['x'|safe] }}|{{ ('x'|safe) is string }}|{{ ('x'|safe) == 'x' }}|{{ ('ab'|safe)[0] + '<' }}|{{ ('ab'|safe)[::-1] + '<' }}|{{ (('ab'|safe) * 2) + '<' }}", "{}", "[Markup('x')]|True|True|a&lt;|ba&lt;|abab&lt;", false},
    {"markup_macro_result_plain", "{% macro m() %}<{{ 1 }}>{% endmacro %}{{ m() + ('&'|safe) }}", "{}", "&lt;1&gt;&", false},
    {"markup_add_int_error", "{{ ('x'|safe) + 1 }}", "{}", "", true}, // TypeError: unsupported operand type(s) for +: 'Markup' and 'int'
    {"f_chain", "{{ '  A,B , c '|trim|lower|replace(' ', '')|upper }}", "{}", "A,B,C", false},
    {"f_unknown_filter", "{{ 1|nosuchfilter }}", "{}", "", true}, // syntax: No filter named 'nosuchfilter'.
    {"t_types", "{{ 1 is number }}{{ 1.0 is number }}{{ true is number }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is mapping }}", "{}", "TrueTrueTrueTrueFalseTrueTrueTrueTrueFalse", false},
    {"t_iterable_sequence", "{{ 'a' is iterable }}{{ [] is iterable }}{{ {} is iterable }}{{ 1 is iterable }}{{ none is iterable }}{{ x is iterable }}{{ 'a' is sequence }}{{ {} is sequence }}{{ 1 is sequence }}", "{}", "TrueTrueTrueFalseFalseTrueTrueTrueFalse", false},
    {"t_none_defined", "{{ none is none }}{{ x is none }}{{ x is defined }}{{ x is undefined }}{{ none is defined }}{{ x is not defined }}", "{}", "TrueFalseFalseTrueTrueTrue", false},
    {"t_bool_tests", "{{ false is false }}{{ 0 is false }}{{ true is true }}{{ 1 is true }}{{ x is false }}", "{}", "TrueFalseTrueFalseFalse", false},
    {"t_numbers", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 10 is divisibleby(3) }}{{ -3 is odd }}", "{}", "TrueTrueTrueFalseTrue", false},
    {"t_compare", "{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 2 is ne 3 }}{{ 2 is lt 3 }}{{ 2 is le 2 }}{{ 3 is gt 2 }}{{ 2 is ge 3 }}{{ 2 is greaterthan 1 }}{{ 1 is lessthan 2 }}", "{}", "TrueFalseTrueTrueTrueTrueFalseTrueTrue", false},
    {"t_in_sameas", "{{ 1 is in [1,2] }}{{ 'a' is in 'xyz' }}{{ none is sameas none }}{{ true is sameas true }}", "{}", "TrueFalseTrueTrue", false},
    {"t_callable_case", "{{ range is callable }}{{ 'a'.upper is callable }}{{ 1 is callable }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aBc' is lower }}", "{}", "TrueTrueFalseTrueTrueFalse", false},
    {"t_filter_test", "{{ 'trim' is filter }}{{ 'nope' is filter }}{{ 'odd' is test }}{{ 'nope' is test }}", "{}", "TrueFalseTrueFalse", false},
    {"t_content_mapping_or_iterable", "{% for c in ['s', {'a':1}, [1], 5, none] %}{{ c is mapping or c is iterable }} {% endfor %}", "{}", "True True True False False ", false},
    {"t_unknown_test", "{{ 1 is nosuchtest }}", "{}", "", true}, // syntax: No test named 'nosuchtest'.
    {"macro_basic", "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}", "{}", "Hello A! Hello B? Hello C.", false},
    {"macro_missing_arg", "{% macro m(a, b) %}[{{ a }}][{{ b }}]{% endmacro %}{{ m(1) }}", "{}", "[1][]", false},
    {"macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", "{}", "1(2, 3){'k': 'v'}", false},
    {"macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", "{}", "", true}, // TypeError: macro 'm' takes not more than 1 argument(s)
    {"macro_unknown_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, z=3) }}", "{}", "", true}, // TypeError: macro 'm' takes no keyword argument 'z'
    {"macro_default_uses_param", "{% macro m(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ m(3) }}", "{}", "3,6", false},
    {"macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", "{}", "120", false},
    {"macro_call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}", "{}", "<b>bold 2</b>", false},
    {"macro_call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1,2]) %}[{{ x }}]{% endcall %}", "{}", "[1][2]", false},
    {"macro_returns_string", "{% macro m() %}42{% endmacro %}{{ m() ~ '!' }} {{ m()|int + 1 }} {{ m() is string }}", "{}", "42! 43 True", false},
    {"filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}|{% filter trim|title %}  x y  {% endfilter %}", "{}", "ABC D|X Y", false},
    {"print_stmt", "{% print 'a' ~ 'b' %}", "{}", "ab", false},
    {"globals_range_dict", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }}", "{}", "[0, 1, 2] [1, 3, 5] [5, 3, 1] {'a': 1, 'b': 2} {'x': 1, 'y': 2}", false},
    {"globals_joiner", "{% set j = joiner(' | ') %}{% for x in 'abc' %}{{ j() }}{{ x }}{% endfor %}", "{}", "a | b | c", false},
    {"globals_namespace_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", "{}", "12", false},
    {"strftime", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%B %d, %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S') }}|{{ strftime_now('%A %a %j %p %I %y %%') }}|{{ strftime_now('%-d/%-m') }}", "{}", "15 Jan 2026|January 15, 2026|2026-01-15 00:00:00|Thursday Thu 015 AM 12 26 %|15/1", false},
    {"raise_exception_msg", "{{ raise_exception('Only user and assistant roles are supported!') }}", "{}", "Only user and assistant roles are supported!", true}, // TemplateError: Only user and assistant roles are supported!
    {"raise_exception_inside_loop", "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% endfor %}", "{\"messages\": [{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"}, {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [1]}, {\"role\": \"user\", \"content\": \"U2\"}]}", "System role not supported", true}, // TemplateError: System role not supported
};
// tojson: Python json.dumps(ensure_ascii=False) formatting
const Case kJsonCases[] = {
    {"json_compact", "{{ t|tojson }}", "{\"t\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get \\\"weather\\\" \\u2014 for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}}}", "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get \\\"weather\\\" — for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}}", false},
    {"json_indent4", "{{ t|tojson(indent=4) }}", "{\"t\": {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Get \\\"weather\\\" \\u2014 for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"location\": {\"type\": \"string\"}, \"unit\": {\"enum\": [\"c\", \"f\"]}}, \"required\": [\"location\"]}}}}", "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Get \\\"weather\\\" — for a city\",\n        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n                \"location\": {\n                    \"type\": \"string\"\n                },\n                \"unit\": {\n                    \"enum\": [\n                        \"c\",\n                        \"f\"\n                    ]\n                }\n            },\n            \"required\": [\n                \"location\"\n            ]\n        }\n    }\n}", false},
    {"json_indent2_positional", "{{ [1, {'a': []}, {}]|tojson(indent=2) }}", "{}", "[\n  1,\n  {\n    \"a\": []\n  },\n  {}\n]", false},
    {"json_indent0", "{{ {'a': [1, 2]}|tojson(indent=0) }}", "{}", "{\n\"a\": [\n1,\n2\n]\n}", false},
    {"json_scalars", "{{ none|tojson }} {{ true|tojson }} {{ 1|tojson }} {{ 1.0|tojson }} {{ 1e16|tojson }} {{ 0.1|tojson }} {{ -5|tojson }} {{ 'nan'|float|tojson }} {{ 'inf'|float|tojson }} {{ '-inf'|float|tojson }}", "{}", "null true 1 1.0 1e+16 0.1 -5 NaN Infinity -Infinity", false},
    {"json_string_arg", "{{ s|tojson }}", "{\"s\": \"{\\\"temperature\\\": 18, \\\"condition\\\": \\\"sunny\\\"}\"}", "\"{\\\"temperature\\\": 18, \\\"condition\\\": \\\"sunny\\\"}\"", false},
    {"json_escapes", "{{ s|tojson }}", "{\"s\": \"quote\\\" back\\\\ nl\\n cr\\r tab\\t bell\\u0007 nul\\u0000 del\\u007f u2028\\u2028 \\u00e9 \\u65e5\\u672c \\ud83d\\ude00 \\u200b\"}", "\"quote\\\" back\\\\ nl\\n cr\\r tab\\t bell\\u0007 nul\\u0000 del\177 u2028  é 日本 😀 ​\"", false},
    {"json_ensure_ascii", "{{ s|tojson(ensure_ascii=true) }}", "{\"s\": \"\\u00e9 \\u65e5\\u672c \\ud83d\\ude00 \\u007f\"}", "\"\\u00e9 \\u65e5\\u672c \\ud83d\\ude00 \\u007f\"", false},
    {"json_sort_keys", "{{ {'b': 1, 'a': {'d': 1, 'c': 2}}|tojson(sort_keys=true) }}", "{}", "{\"a\": {\"c\": 2, \"d\": 1}, \"b\": 1}", false},
    {"json_separators", "{{ {'a': [1, 2]}|tojson(separators=(',', ':')) }}", "{}", "{\"a\":[1,2]}", false},
    {"json_tuple_and_keys", "{{ {'t': (1, 2), 1: 'one', none: 0, true: 'x'}|tojson }}", "{}", "{\"t\": [1, 2], \"1\": \"x\", \"null\": 0}", false},
    {"json_key_order_preserved", "{{ d|tojson }} {% for k, v in d.items() %}{{ k }}{% endfor %}", "{\"d\": {\"z\": 1, \"a\": 2, \"m\": 3}}", "{\"z\": 1, \"a\": 2, \"m\": 3} zam", false},
    {"json_empty_indent", "{{ {'a': {}, 'b': []}|tojson(indent=4) }}", "{}", "{\n    \"a\": {},\n    \"b\": []\n}", false},
    {"json_indent_string", "{{ [1]|tojson(indent='\\t') }}", "{}", "[\n\t1\n]", false},
    {"json_unicode_keys", "{{ {'é': 'ü'}|tojson }}", "{}", "{\"é\": \"ü\"}", false},
    {"json_undefined_error", "{{ nope|tojson }}", "{}", "", true}, // TypeError: Object of type Undefined is not JSON serializable
    {"json_generator_error", "{{ [1]|select|tojson }}", "{}", "", true}, // TypeError: Object of type generator is not JSON serializable
    {"json_mistral_slice", "{% set out = f|tojson %}{{ out[:-1] }}, \"id\": \"x\"}", "{\"f\": {\"name\": \"n\", \"arguments\": {\"a\": 1}}}", "{\"name\": \"n\", \"arguments\": {\"a\": 1}, \"id\": \"x\"}", false},
    {"json_big_ints_floats", "{{ [9007199254740993, 1.5e300, 2.5e-8, 100.0, 123456789012345678]|tojson }}", "{}", "[9007199254740993, 1.5e+300, 2.5e-08, 100.0, 123456789012345678]", false},
};
// clang-format on

tmpl::RenderOptions frozenClock() {
    tmpl::RenderOptions o;
    o.clock = [] { return tmpl::DateTime{2026, 1, 15, 0, 0, 0}; };
    return o;
}

template <size_t N> void addRows(const Case (&cases)[N]) {
    for (const Case& c : cases) QTest::newRow(c.name) << static_cast<const void*>(&c);
}

} // namespace

class TestJinja : public QObject {
    Q_OBJECT
private:
    void addColumns() { QTest::addColumn<const void*>("entry"); }

    void check() {
        QFETCH(const void*, entry);
        const Case& c = *static_cast<const Case*>(entry);
        Result<tmpl::ChatTemplate> t = tmpl::ChatTemplate::parse(c.source);
        Result<std::string> out = t.isOk() ? t->render(c.variables, frozenClock())
                                           : Result<std::string>(t.status());
        if (c.fails) {
            QVERIFY2(!out.isOk(), ("expected a failure, got: " + (out.isOk() ? *out : std::string())).c_str());
            if (*c.expected) QCOMPARE(out.status().message(), std::string(c.expected));
            return;
        }
        QVERIFY2(out.isOk(), out.status().toString().c_str());
        const std::string msg = "\n   got:  " + nlohmann::ordered_json(*out).dump() + "\n   want: " +
                                nlohmann::ordered_json(std::string(c.expected)).dump();
        QVERIFY2(*out == c.expected, msg.c_str());
    }

private Q_SLOTS:
    void whitespaceScopingLoops_data() {
        addColumns();
        addRows(kWsCases);
    }
    void whitespaceScopingLoops() { check(); }

    void expressions_data() {
        addColumns();
        addRows(kExprCases);
    }
    void expressions() { check(); }

    void filtersTestsMacros_data() {
        addColumns();
        addRows(kFiltersCases);
    }
    void filtersTestsMacros() { check(); }

    void tojson_data() {
        addColumns();
        addRows(kJsonCases);
    }
    void tojson() { check(); }
};

QTEST_GUILESS_MAIN(TestJinja)
#include "test_jinja.moc"
