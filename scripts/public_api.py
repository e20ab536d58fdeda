#!/usr/bin/env python3
"""The public API as the headers declare it: every top-level function or
variable declaration in include/mtk/*.h and include/mtk/ops/*.h, whether it
carries the MTK_API marker, and where.

  scripts/public_api.py            lists the declared names, one a line
  scripts/public_api.py --check    lists declarations without MTK_API (exit 1)
  scripts/public_api.py --mark     inserts MTK_API before each of those

The libmtk test (tests/lib/test_lib_symbols.py) compares these names with
what libmtk.so exports.  The parser knows the C the headers are written in:
comments, preprocessor lines (also inside a declaration), extern "C"
blocks, struct/enum bodies, typedefs and static inline definitions, which
declare nothing the library exports."""
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MARKER = "MTK_API"


@dataclass
class Declaration:
    name: str
    path: Path
    offset: int  # of the declaration's first character in the file
    end: int  # of its last character (the ';')
    line: int
    marked: bool
    text: str  # without comments and preprocessor lines


def headers(root=REPO):
    include = Path(root) / "include" / "mtk"
    return sorted(include.glob("*.h")) + sorted((include / "ops").glob("*.h"))


def _statements(src):
    """Yields (start, end offset, text) of each top-level statement of `src`."""
    i, n, depth = 0, len(src), 0
    start, text, braced = None, [], False
    at_line_start = True
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            end = src.find("*/", i + 2)
            i = n if end < 0 else end + 2
            text.append(" ")
            continue
        if src.startswith("//", i):
            end = src.find("\n", i)
            i = n if end < 0 else end
            continue
        if at_line_start and c == "#":  # a preprocessor line, with continuations
            while i < n and src[i] != "\n":
                i += 2 if src.startswith("\\\n", i) else 1
            continue
        if c == "\n":
            at_line_start = True
            text.append(" ")
            i += 1
            continue
        if c.isspace():
            text.append(c)
            i += 1
            continue
        at_line_start = False
        if c in "\"'":  # a literal: copied whole
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            if start is None:
                start = i
            text.append(src[i:j + 1])
            i = j + 1
            continue
        if depth == 0 and start is None:
            start = i
        if c == "{":
            so_far = "".join(text).strip()
            if depth == 0 and re.fullmatch(r'extern\s+"C"', so_far):
                start, text = None, []
            else:
                depth += 1
                braced = True
                text.append(c)
        elif c == "}":
            if depth == 0:  # the end of an extern "C" block
                start, text, braced = None, [], False
            else:
                depth -= 1
                text.append(c)
                head = "".join(text).split("{", 1)[0].strip()
                if depth == 0 and ")" in head and not re.match(r"(typedef|struct|union|enum)\b", head):
                    yield start, i, "".join(text)  # an inline definition: no ';' follows
                    start, text, braced = None, [], False
        elif c == ";" and depth == 0:
            yield start, i, "".join(text)
            start, text, braced = None, [], False
        else:
            text.append(c)
        i += 1


def _strip_attributes(text):
    while True:
        m = re.search(r"__attribute__\s*\(\(", text)
        if not m:
            return text
        depth, j = 0, m.end() - 2
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        text = text[:m.start()] + " " + text[j:]


def _declared_name(text):
    """The name a declaration declares, or None when it declares nothing
    the library defines (typedefs, tags, inline definitions)."""
    text = " ".join(_strip_attributes(text).split())
    if re.match(r"(typedef|static)\b", text) or "{" in text:
        return None
    if "(" not in text:  # a variable, or a tag's forward declaration
        if re.fullmatch(r"(struct|union|enum)\s+\w+", text):
            return None
        m = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", text)
        return m.group(1) if m else None
    head, rest = text.split("(", 1)
    if rest.lstrip().startswith("*"):  # a function returning a function pointer: T (*name(...))(...)
        m = re.match(r"\s*\*\s*(\w+)\s*\(", rest)
        return m.group(1) if m else None
    m = re.search(r"(\w+)\s*$", head)
    return m.group(1) if m else None


def declarations(root=REPO):
    out = []
    for path in headers(root):
        src = path.read_text()
        for start, end, text in _statements(src):
            name = _declared_name(text)
            if name is None:
                continue
            marked = re.match(rf"\s*{MARKER}\b", text) is not None
            out.append(Declaration(name, path, start, end, src.count("\n", 0, start) + 1, marked, text))
    return out


def mark(root=REPO):
    """Inserts the marker before every unmarked declaration (and indents
    its continuation lines as far, to keep parameters aligned); returns
    how many."""
    count = 0
    by_file = {}
    for d in declarations(root):
        if not d.marked:
            by_file.setdefault(d.path, []).append(d)
    for path, decls in by_file.items():
        src = path.read_text()
        for d in sorted(decls, key=lambda d: d.offset, reverse=True):
            body = re.sub(r"\n(?=[ \t])", "\n" + " " * (len(MARKER) + 1), src[d.offset:d.end + 1])
            src = src[:d.offset] + MARKER + " " + body + src[d.end + 1:]
            count += 1
        path.write_text(src)
    return count


def main(argv):
    if argv[1:] == ["--mark"]:
        print(f"marked {mark()} declarations")
        return 0
    decls = declarations()
    if argv[1:] == ["--check"]:
        bad = [d for d in decls if not d.marked]
        for d in bad:
            print(f"{d.path.relative_to(REPO)}:{d.line}: {d.name} lacks {MARKER}")
        return 1 if bad else 0
    for name in sorted({d.name for d in decls}):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
