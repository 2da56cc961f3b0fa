#!/usr/bin/env python3
"""Writes engine/tokenizer/unicode_tables.cpp: the codepoint class ranges the tokenizers use.

Each codepoint gets one class byte: its general-category group (letter, number, punctuation,
symbol, mark, separator, control, or undefined for unassigned) in the low bits, plus a flag for
the White_Space property. Runs of codepoints with the same byte become one range entry.

Sources, in order of preference:
  1. UnicodeData.txt + PropList.txt from a Unicode Character Database folder
     (Debian: `apt-get install unicode-data` puts them in /usr/share/unicode), or
  2. Python's own `unicodedata` module (older Unicode version; White_Space from a fixed list).

Usage: scripts/gen_unicode_tables.py [--ucd DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys

MAX_CODEPOINT = 0x110000

# Class values; keep in sync with CharClass in engine/tokenizer/unicode.h.
CLASS_UNDEFINED = 0
CLASS_LETTER = 1
CLASS_NUMBER = 2
CLASS_PUNCTUATION = 3
CLASS_SYMBOL = 4
CLASS_MARK = 5
CLASS_SEPARATOR = 6
CLASS_CONTROL = 7
WHITESPACE_FLAG = 0x10

GROUP_OF_CATEGORY_LETTER = {
    "L": CLASS_LETTER,
    "N": CLASS_NUMBER,
    "P": CLASS_PUNCTUATION,
    "S": CLASS_SYMBOL,
    "M": CLASS_MARK,
    "Z": CLASS_SEPARATOR,
}

# The Unicode White_Space property, used when PropList.txt is not available. It has not
# changed since Unicode 6.
WHITE_SPACE_FALLBACK = (
    list(range(0x09, 0x0E)) + [0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B)) +
    [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
)


def class_of_category(cat: str) -> int:
    if cat == "Cn":
        return CLASS_UNDEFINED
    if cat[0] == "C":  # Cc, Cf, Co, Cs
        return CLASS_CONTROL
    return GROUP_OF_CATEGORY_LETTER[cat[0]]


def classes_from_ucd(path: str) -> list[int]:
    classes = [CLASS_UNDEFINED] * MAX_CODEPOINT
    range_start = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            if len(fields) < 3:
                continue
            cp = int(fields[0], 16)
            name, cat = fields[1], fields[2]
            if name.endswith(", First>"):
                range_start = cp
                continue
            if name.endswith(", Last>"):
                assert range_start is not None, f"range end without start at {cp:X}"
                for c in range(range_start, cp + 1):
                    classes[c] = class_of_category(cat)
                range_start = None
                continue
            classes[cp] = class_of_category(cat)
    return classes


def white_space_from_proplist(path: str) -> list[int]:
    result = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            cps, prop = (part.strip() for part in line.split(";"))
            if prop != "White_Space":
                continue
            if ".." in cps:
                lo, hi = (int(x, 16) for x in cps.split(".."))
                result.extend(range(lo, hi + 1))
            else:
                result.append(int(cps, 16))
    return result


def simple_lowercase_from_ucd(path: str) -> dict[int, int]:
    lower = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            if len(fields) >= 14 and fields[13]:
                lower[int(fields[0], 16)] = int(fields[13], 16)
    return lower


def load(ucd_dir: str | None):
    if ucd_dir:
        data = os.path.join(ucd_dir, "UnicodeData.txt")
        props = os.path.join(ucd_dir, "PropList.txt")
        version = "unknown"
        readme = os.path.join(ucd_dir, "ReadMe.txt")
        derived_age = os.path.join(ucd_dir, "DerivedAge.txt")
        for candidate in (derived_age, readme):
            if os.path.exists(candidate):
                with open(candidate, encoding="utf-8", errors="replace") as f:
                    head = f.readline()
                # "# DerivedAge-15.0.0.txt"
                if "-" in head and ".txt" in head:
                    version = head.split("-", 1)[1].split(".txt", 1)[0]
                    break
        classes = classes_from_ucd(data)
        white = white_space_from_proplist(props) if os.path.exists(props) else WHITE_SPACE_FALLBACK
        lower = simple_lowercase_from_ucd(data)
        source = f"UnicodeData.txt and PropList.txt, Unicode {version}"
    else:
        import unicodedata

        classes = [class_of_category(unicodedata.category(chr(c))) for c in range(MAX_CODEPOINT)]
        white = WHITE_SPACE_FALLBACK
        lower = {}
        for c in range(MAX_CODEPOINT):
            low = chr(c).lower()
            if len(low) == 1 and ord(low) != c:
                lower[c] = ord(low)
        source = f"Python unicodedata, Unicode {unicodedata.unidata_version}"
    return classes, white, lower, source


def check_contraction_case_folding(lower: dict[int, int]) -> None:
    # The pre-tokenizers match contractions ('s 't 're 've 'm 'll 'd) case-insensitively and
    # the C++ side only folds ASCII. That is exact only if no other codepoint lowercases to
    # one of these letters; fail loudly if a Unicode update ever breaks that.
    letters = {ord(c) for c in "strvemld"}
    offenders = [c for c, lo in lower.items() if lo in letters and not (0x41 <= c <= 0x5A)]
    if offenders:
        sys.exit("non-ASCII codepoints lowercase to contraction letters: "
                 + ", ".join(f"U+{c:04X}" for c in offenders))


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "engine", "tokenizer", "unicode_tables.cpp")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ucd", default=None,
                        help="folder with UnicodeData.txt (default: /usr/share/unicode if present)")
    parser.add_argument("--out", default=default_out)
    args = parser.parse_args()

    ucd = args.ucd
    if ucd is None and os.path.exists("/usr/share/unicode/UnicodeData.txt"):
        ucd = "/usr/share/unicode"
    classes, white, lower, source = load(ucd)
    check_contraction_case_folding(lower)

    info = list(classes)
    for c in white:
        info[c] |= WHITESPACE_FLAG

    ranges = []
    for cp in range(MAX_CODEPOINT):
        if not ranges or ranges[-1][1] != info[cp]:
            ranges.append((cp, info[cp]))

    lines = [
        "// Codepoint class table for the tokenizers: general-category group and White_Space,",
        "// as runs of codepoints. Generated by scripts/gen_unicode_tables.py (do not edit) from",
        f"// {source}.",
        '#include "tokenizer/unicode.h"',
        "",
        "namespace hearth::tokenizer::detail {",
        "",
        "// Each entry starts a run that ends where the next one starts (the last: at U+10FFFF).",
        "const CodepointRun kCodepointRuns[] = {",
    ]
    row = []
    for start, value in ranges:
        row.append(f"{{0x{start:05X}, 0x{value:02X}}}")
        if len(row) == 5:
            lines.append("    " + ", ".join(row) + ",")
            row = []
    if row:
        lines.append("    " + ", ".join(row) + ",")
    lines += [
        "};",
        "",
        f"const size_t kCodepointRunCount = {len(ranges)};",
        "",
        "} // namespace hearth::tokenizer::detail",
        "",
    ]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}: {len(ranges)} runs from {source}")


if __name__ == "__main__":
    main()
