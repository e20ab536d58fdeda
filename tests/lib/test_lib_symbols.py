"""libmtk.so exports the public API and nothing else: the declarations of
include/mtk marked MTK_API (scripts/public_api.py reads them), all in the
mtk_ namespace."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import public_api  # noqa: E402


def defined_symbols(*nm_args):
    out = subprocess.run(["nm", "--defined-only", *nm_args], capture_output=True, text=True, check=True)
    # "address type name" rows; archive member headers and blank lines have fewer fields
    return {f[2] for f in (line.split() for line in out.stdout.splitlines()) if len(f) == 3}


def test_every_public_declaration_carries_mtk_api():
    unmarked = [f"{d.path.relative_to(REPO)}:{d.line}: {d.name}" for d in public_api.declarations() if not d.marked]
    assert unmarked == [], "public declarations without MTK_API (scripts/public_api.py --mark adds it):\n" + \
        "\n".join(unmarked)


def test_shared_library_exports_only_declared_mtk_symbols(build_dir):
    exported = defined_symbols("-D", str(build_dir / "libmtk.so"))
    declared = {d.name for d in public_api.declarations()}
    assert len(exported) > 400  # the whole API, not an empty library
    assert sorted(n for n in exported if not n.startswith("mtk_")) == []
    assert sorted(exported - declared) == []


def test_every_public_function_the_library_defines_is_exported(build_dir):
    exported = defined_symbols("-D", str(build_dir / "libmtk.so"))
    defined = defined_symbols("-g", str(build_dir / "libmtk.a"))
    declared = {d.name for d in public_api.declarations()}
    assert sorted((declared & defined) - exported) == []


def test_header_parser_reads_every_form_of_declaration(tmp_path):
    inc = tmp_path / "include" / "mtk"
    (inc / "ops").mkdir(parents=True)
    (inc / "a.h").write_text('''/* mtk_in_comment(void); */
#ifndef A_H
#define A_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct mtk_thing { int (*fn)(int); } mtk_thing;
typedef void (*mtk_cb)(void *user);
struct mtk_forward;
MTK_API int mtk_marked(int a,
                       int b);
const char *mtk_unmarked(void); // trailing
bool mtk_formatted(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static inline int mtk_inline(void) { return 1; }
extern const int mtk_table[];
void (*mtk_returns_fn(int x))(void);
#ifdef __cplusplus
}
#endif
#endif
''')
    (inc / "ops" / "b.h").write_text("MTK_API void mtk_op_b(void);\n")
    got = {d.name: d.marked for d in public_api.declarations(tmp_path)}
    assert got == {"mtk_marked": True, "mtk_unmarked": False, "mtk_formatted": False, "mtk_table": False,
                   "mtk_returns_fn": False, "mtk_op_b": True}
    assert public_api.mark(tmp_path) == 4
    assert all(d.marked for d in public_api.declarations(tmp_path))
