"""mtk shard --search: the best plans equal a brute force over the same cost
model (every configuration planned on its own with `mtk shard --gpu`), no
plan over memory is returned, a world no mesh fits is a clear error, and the
counts and time are reported."""
import itertools
import json

MODEL = "llama-3.2-1b"
COMMON = ["--input", "1x32", "--global-batch", "8", "--gpu", "h100-80gb", "--gpu-memory", "14", "--margin", "0"]


def search(run, *args):
    r = run("shard", MODEL, "--search", *COMMON, *args, "--json", timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def key(p):
    return (p["tp"], p["pp"], p["dp"], p["ep"], p["zero"], p["fsdp"], p["sp"], p["recompute"], p["micro_batch"])


def brute_force(run, gpus):
    """Every configuration the search enumerates, each through `mtk shard`."""
    found = []
    for tp, pp in itertools.product(range(1, gpus + 1), repeat=2):
        if gpus % (tp * pp):
            continue
        dp = gpus // (tp * pp)
        shardings = [[]] + ([["--zero", str(z)] for z in (1, 2, 3)] + [["--fsdp"]] if dp > 1 else [])
        for sharding, sp, rc in itertools.product(shardings, [False, True] if tp > 1 else [False],
                                                  ["none", "selective", "full"]):
            args = ["--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--recompute", rc, *sharding]
            r = run("shard", MODEL, *args, *(["--sp"] if sp else []), *COMMON, "--json", timeout=120)
            assert r.returncode == 0, (args, r.stderr)
            found.append(json.loads(r.stdout)["estimate"])
    return found


def test_search_best_equals_brute_force_over_single_plans(run):
    gpus = 2
    got = search(run, "--gpus", str(gpus), "--max-micro-batch", "1", "--top", "1000")
    every = brute_force(run, gpus)
    assert got["searched"] == len(every)
    fits = [e for e in every if e["fits"]]
    assert got["feasible"] == len(fits) and 0 < len(fits) < len(every)
    fits.sort(key=lambda e: (e["step_seconds"], e["peak_bytes"]))
    plans = got["plans"]
    assert len(plans) == len(fits)
    assert key(plans[0]) == key(fits[0])
    by_key = {key(e): e for e in fits}
    for p in plans:
        want = by_key[key(p)]
        assert p["step_seconds"] == want["step_seconds"] and p["peak_bytes"] == want["peak_bytes"], key(p)
        assert p["communication_seconds"] == want["communication_seconds"]
    assert [p["step_seconds"] for p in plans] == [e["step_seconds"] for e in fits]


def test_search_never_returns_plans_over_memory(run):
    got = search(run, "--gpus", "4", "--top", "1000")
    assert 0 < got["feasible"] < got["searched"]
    assert len(got["plans"]) == got["feasible"]
    for p in got["plans"]:
        assert p["fits"] and p["peak_bytes"] <= p["budget_bytes"] == 14 << 30


def test_search_reports_configurations_and_time(run):
    got = search(run, "--gpus", "8", "--top", "3")
    assert got["searched"] >= got["feasible"] > 0
    assert got["seconds"] > 0 and got["cpu_seconds"] >= 0 and got["analysis_seconds"] > 0
    assert got["gpu"]["name"] == "h100-80gb" and got["gpu"]["tflops"] == 989
    r = run("shard", MODEL, "--search", "--gpus", "8", *COMMON, "--top", "3")
    assert r.returncode == 0, r.stderr
    assert f"searched {got['searched']} configurations" in r.stdout
    assert "why #1 wins" in r.stdout


def test_search_of_world_no_mesh_fits_is_a_clear_error(run):
    # 17 is prime: 32 heads are not divisible by tp 17, 16 layers cannot
    # fill pp 17, a global batch of 8 is not a multiple of dp 17
    r = run("shard", MODEL, "--search", "--gpus", "17", *COMMON)
    assert r.returncode == 1
    assert "--gpus 17" in r.stderr and "num_attention_heads" in r.stderr and "16 layers" in r.stderr


def test_slower_network_slows_plans_that_cross_nodes(run):
    fast = search(run, "--gpus", "16", "--top", "1")["plans"][0]
    slow = search(run, "--gpus", "16", "--top", "1", "--ib-gbps", "0.5")["plans"][0]
    assert slow["step_seconds"] > fast["step_seconds"]
    alone = search(run, "--gpus", "16", "--top", "1", "--ib-gbps", "0.5", "--gpus-per-node", "16")["plans"][0]
    assert alone["step_seconds"] == fast["step_seconds"] or alone["step_seconds"] < slow["step_seconds"]


def test_search_needs_gpus_and_global_batch(run):
    r = run("shard", MODEL, "--search", "--input", "1x32")
    assert r.returncode == 2 and "--gpus" in r.stderr
    r = run("shard", MODEL, "--search", "--gpus", "2", "--input", "1x32", "--global-batch", "8", "--gpu", "h100")
    assert r.returncode == 2 and "unknown --gpu 'h100'" in r.stderr
