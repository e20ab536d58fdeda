"""nn and models call ops through the typed API (mtk/ops/*.h), never by
name: a renamed or re-signed op then fails to compile instead of failing
at run time inside a forward pass."""
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
BY_NAME = re.compile(r"\b(mtk_op_find|mtk_op_call_init|mtk_op_args|nn_call_\w+)\s*\(")


def test_layers_and_models_call_no_op_by_name():
    offenders = []
    for layer in ("nn", "models"):
        for path in sorted((SRC / layer).glob("*.[ch]")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if BY_NAME.search(line):
                    offenders.append(f"{path.relative_to(SRC)}:{number}: {line.strip()}")
    assert offenders == []
