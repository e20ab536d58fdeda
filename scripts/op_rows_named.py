#!/usr/bin/env python3
"""Rewrites the op table's rows from positional to named columns.

    MTK_OP(ID, "name", "sig", meta, cpu, cost, flags, info)
becomes
    MTK_OP(ID, .name = "name", .signature = "sig", .meta = meta, .cpu = cpu,
           .cost = cost, .flags = flags, .info = info)
with the columns that are NULL or 0 left out (they default to that).

Every MTK_OP( in src/ops/list_*.h is rewritten, including those inside the
family macros' #define bodies.  A row already in the named form is left
alone, so running it twice changes nothing.

Usage: python3 scripts/op_rows_named.py   (from the repository root)
"""
import glob
import re

COLUMNS = ["name", "signature", "meta", "cpu", "cost", "flags", "info"]
DEFAULTS = {"NULL", "0"}


def split_args(text):
    """Top-level comma split of a macro's argument text (strings and
    parentheses respected)."""
    args, depth, cur, i = [], 0, "", 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur += text[i:j + 1]
            i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    args.append(cur)
    return args


def matching_paren(text, start):
    """Index of the ')' closing the '(' at start."""
    depth, i = 0, start
    while True:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1


def convert_row(args, indent, continued):
    """The named form of one row's arguments; `continued` rows are inside a
    #define and need a backslash before each line break."""
    ident = args[0].strip()
    cols = []
    for col, raw in zip(COLUMNS, args[1:]):
        value = " ".join(part.strip() for part in raw.strip().splitlines())
        value = re.sub(r"\s*\\$", "", value)
        value = value.replace(" \\ ", " ")
        if value in DEFAULTS:
            continue
        cols.append(f".{col} = {value}")
    # ID and name, the signature, the functions, then flags and info: one
    # group a line
    groups = [[c for c in cols if c.startswith(k)] for k in
              ((".name",), (".signature",), (".meta", ".cpu", ".cost"), (".flags", ".info"))]
    lines = [", ".join([ident] + groups[0])] + [", ".join(g) for g in groups[1:] if g]
    brk = " \\\n" if continued else "\n"
    return ("," + brk + indent).join(lines)


def convert(source):
    out, pos = [], 0
    for m in re.finditer(r"MTK_OP\(", source):
        if m.start() < pos:
            continue
        open_at = m.end() - 1
        close = matching_paren(source, open_at)
        inner = source[open_at + 1:close]
        args = split_args(inner)
        if len(args) != 8 or args[1].strip().startswith("."):
            continue
        line_start = source.rfind("\n", 0, m.start()) + 1
        indent = " " * (m.start() - line_start + len("MTK_OP("))
        # a row inside a #define: its line starts one, or the line before
        # ends in a backslash
        prev = source[:line_start].rstrip("\n")
        continued = source[line_start:].startswith("#define") or prev.endswith("\\")
        if continued:
            indent = " " * len("    MTK_OP(")
        out.append(source[pos:open_at + 1])
        out.append(convert_row(args, indent, continued))
        out.append(")")
        pos = close + 1
    out.append(source[pos:])
    return "".join(out)


def rename_define_params(source):
    """A family macro whose parameters are named like columns (name, meta,
    cpu, flags) would substitute into `.name = `: those parameters get a
    trailing underscore inside the #define that holds an MTK_OP row."""
    def fix(m):
        text = m.group(0)
        if "MTK_OP(" not in text:
            return text
        params = re.match(r"#define\s+\w+\(([^)]*)\)", text).group(1)
        for p in (q.strip() for q in params.split(",")):
            if p in COLUMNS:
                text = re.sub(r"(?<![.\w])" + p + r"\b", p + "_", text)
        return text
    return re.sub(r"#define(?:[^\n]*\\\n)*[^\n]*", fix, source)


def main():
    for path in sorted(glob.glob("src/ops/list_*.h")):
        with open(path) as f:
            old = f.read()
        new = rename_define_params(convert(old))
        if new != old:
            with open(path, "w") as f:
                f.write(new)
            print("rewrote", path)


if __name__ == "__main__":
    main()
