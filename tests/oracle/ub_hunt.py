"""Hunts integer overflow (undefined behaviour) in mtk's size arithmetic.

The oracle generator's expressions, mutated the way an attacker would: a
tensor literal gets a size-0 dim (so that meta, and cpu, accept it without
memory) and huge sizes beside it (2^31, 2^62, 2^63-1...), and integer
arguments (dims, pads, strides, starts) now and then become huge or
negative-huge.  They run through an `mtk eval --batch` built with
recoverable UBSan (-fsanitize=undefined -fsanitize-recover=undefined), so
one run reports every site; the script prints each site once with an
expression that reaches it, and exits 1 when there is any.

    cmake -S . -B build-ubsan -DCMAKE_BUILD_TYPE=Debug -DMTK_BUILD_TESTS=OFF \\
        -DMTK_BUILD_BENCH=OFF -DCMAKE_C_FLAGS="-O1 -fsanitize=undefined \\
        -fsanitize-recover=undefined" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=undefined
    cmake --build build-ubsan --target mtk
    python3 tests/oracle/ub_hunt.py --bin build-ubsan/mtk --cases 20000 --seed 1
"""

import argparse
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402

HUGE = [2**31, 2**32 + 1, 2**40, 2**62, 2**62 + 3, 2**63 - 1, 3 * 2**61]
HUGE_ARGS = HUGE + [-(2**62), -(2**63) + 1, -(2**63)]
LITERAL = re.compile(r"\b(f32|f16|bf16|f64|i64|i32|i16|i8|u8|bool)\[([0-9, ]*)\]")
INT_ARG = re.compile(r"(?<=[(,\[] )-?\d+(?=[,)\]])|(?<=[(,\[])-?\d+(?=[,)\]])")
REPORT = re.compile(r"^(\S+?:\d+):\d+: runtime error: (.*)$")


def mutate_literal(rng, m):
    sizes = [int(s) for s in m.group(2).replace(" ", "").split(",") if s]
    if not sizes or rng.random() < 0.2:
        return m.group(0)
    if 0 not in sizes:
        sizes[rng.randrange(len(sizes))] = 0
    sizes = [rng.choice(HUGE) if s != 0 and rng.random() < 0.6 else s for s in sizes]
    return "%s[%s]" % (m.group(1), ",".join(map(str, sizes)))


def mutate(rng, expr):
    expr = LITERAL.sub(lambda m: mutate_literal(rng, m), expr)
    # integer arguments outside literals: dims, pads, sizes, starts
    parts = LITERAL.split(expr)
    out, i = [], 0
    while i < len(parts):
        text = parts[i]
        text = INT_ARG.sub(lambda m: str(rng.choice(HUGE_ARGS)) if rng.random() < 0.15 else m.group(0), text)
        out.append(text)
        if i + 2 < len(parts):
            out.append("%s[%s]" % (parts[i + 1], parts[i + 2]))
        i += 3
    return "".join(out)


def run_one(binary, device, text, timeout):
    """(return code, stderr) of one eval process; rc None when it timed out."""
    env = dict(os.environ, UBSAN_OPTIONS="halt_on_error=0:print_stacktrace=0")
    cmd = [binary, "eval", "--device", device, "--json"] + (["--batch", "-"] if "\n" in text else [text])
    try:
        p = subprocess.run(cmd, input=text if "\n" in text else None, capture_output=True, text=True,
                           env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, p.stderr


def reports(stderr):
    return [m for m in map(REPORT.match, stderr.splitlines()) if m]


def run(binary, exprs, device, chunk=250):
    """{site: (expression, what)}: each UBSan site, crash or hang once."""
    sites = {}
    for start in range(0, len(exprs), chunk):
        batch = exprs[start:start + chunk]
        rc, stderr = run_one(binary, device, "\n".join(batch) + "\n", 300)
        clean = rc in (0, 1) and all(m.group(1) in sites for m in reports(stderr))
        if clean:
            continue
        # replay one by one to find the expressions (and only new sites)
        for expr in batch:
            rc, stderr = run_one(binary, device, expr, 30)
            if rc is None:
                sites.setdefault("hang (over 30 s)", (expr, "timeout"))
            elif rc < 0 or rc > 2:
                sites.setdefault("crash (rc %d)" % rc, (expr, stderr.strip()[-300:]))
            for m in reports(stderr):
                sites.setdefault(m.group(1), (expr, m.group(2)))
    return sites


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build-ubsan/mtk")
    ap.add_argument("--cases", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="meta", choices=["meta", "cpu"])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    exprs = [mutate(rng, e) for e in gen.generate(args.seed, args.cases, "meta")]
    sites = run(args.bin, exprs, args.device)
    for site, (expr, what) in sorted(sites.items()):
        print("%s: %s\n    %s" % (site, what, expr))
    print("%d expressions, %d sites" % (len(exprs), len(sites)))
    return 1 if sites else 0


if __name__ == "__main__":
    sys.exit(main())
