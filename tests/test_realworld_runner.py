"""The real-script corpus runner's pure logic: manifest schema, output normaliser, verdicts, finding
judgement and the Markdown report. No mirrors, no network, no training runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent / "bench" / "realworld"


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"realworld_{name}", BENCH / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


run = _load("run")
recipes = _load("recipes")
report = _load("report")

ENTRY = """
[[script]]
id = "x"
repo = "owner/name"
commit = "0123456789abcdef0123456789abcdef01234567"
path = "train.py"
kind = "single"
shape = "module-level loop"
checks = { completes = "pass", ddp = "pass", shards = "pass" }
"""


def test_manifest_in_repository_is_valid_and_large_enough():
    entries = run.load_manifest()
    ddp = [e for e in entries if e["kind"] == "ddp"]
    assert len(entries) >= 40
    assert len({e["repo"] for e in entries}) >= 15
    assert len(ddp) >= 15 and len({e["repo"] for e in ddp}) >= 8
    runnable = [e for e in entries if e.get("runs_on_cpu", True)]
    assert len(runnable) >= 40


def test_manifest_avoids_reserved_repositories():
    reserved = {
        "pytorch/examples",
        "pytorch/tutorials",
        "karpathy/nanogpt",
        "karpathy/mingpt",
        "huggingface/pytorch-image-models",
        "huggingface/accelerate",
        "facebookresearch/dino",
        "facebookresearch/moco",
        "kuangliu/pytorch-cifar",
        "yunjey/pytorch-tutorial",
        "eriklindernoren/pytorch-gan",
        "milesial/pytorch-unet",
        "lucidrains/x-transformers",
        "lightning-ai/pytorch-lightning",
        "farzadsabahi/finetune_llm",
        "vainf/deeplabv3plus-pytorch",
        "amdegroot/ssd.pytorch",
        "descriptinc/melgan-neurips",
        "dome272/diffusion-models-pytorch",
        "facebookresearch/detectron2",
        "facebookresearch/mae",
        "jik876/hifi-gan",
        "openai/improved-diffusion",
        "sgrvinod/a-pytorch-tutorial-to-object-detection",
        "ultralytics/yolov5",
    }
    assert not {e["repo"].lower() for e in run.load_manifest()} & reserved


def test_minimal_entry_loads():
    (e,) = run.load_manifest(text=ENTRY)
    assert e["id"] == "x"


@pytest.mark.parametrize(
    "extra, message",
    [
        ('kind2 = "x"', "unknown key 'kind2'"),
        ('timeout = "long"', "'timeout' must be int"),
        ('data = [{ kind = "nope" }]', "unknown data kind 'nope'"),
        ('data = [{ kind = "text" }]', "needs 'path'"),
        ('data = [{ kind = "text", path = "a", colour = 1 }]', "takes no argument 'colour'"),
        ('true_findings = [{ code = "DDP406", line = 3, reason = "r" }]', "only for kind = 'ddp'"),
        ('patches = [{ old = "a", new = "b" }]', "a patch is a table"),
    ],
)
def test_invalid_entries_are_reported(extra, message):
    with pytest.raises(run.ManifestError, match=message):
        run.load_manifest(text=ENTRY + extra + "\n")


def test_bad_commit_and_duplicate_ids():
    with pytest.raises(run.ManifestError, match="40 hex"):
        run.load_manifest(text=ENTRY.replace("0123456789abcdef0123456789abcdef01234567", "main"))
    with pytest.raises(run.ManifestError, match="duplicate id"):
        run.load_manifest(text=ENTRY + ENTRY)


def test_normaliser_masks_numbers_times_and_progress_bars():
    a = "epoch 1 loss 0.6931 took 3.2s\n 50%|#####     | 5/10 [00:01<00:01, 4.1it/s]\nsaved at 12:03:44\n\n"
    b = "epoch 1 loss 0.7105 took 11.9s\nsaved at 08:00:01\n"
    assert run.normalise_output(a) == run.normalise_output(b) == ["epoch # loss # took #s", "saved at #"]
    assert run.normalise_output("UserWarning: something\nok") == ["ok"]
    assert run.normalise_output("acc: 0.5, 0.25\n") == ["acc: #"]
    assert run.normalise_output("[1/10] x\n") != run.normalise_output("[1/10] y\n")
    assert run.normalise_output("step 1\rstep 2\rstep 3 done\n") == ["step # done"]  # a redrawn line: its last state


def test_paths_with_timestamps_compare_equal():
    assert run.normalise_path("runs/Nov30_18-22-01_host/events.out.tfevents.1.host.2") == run.normalise_path(
        "runs/Nov30_19-01-59_host/events.out.tfevents.9.host.7"
    )


def _plain(rc=0, out="loss 1.0\n", files=("a.pt",)):
    return {"rc": rc, "stdout": out, "files": list(files)}


def test_compare_runs():
    assert run.compare_runs(_plain(), _plain(out="loss 0.5\n")) == []
    assert run.compare_runs(_plain(), _plain(rc=1))[0] == "exit code 0 -> 1"
    assert "stdout differs" in run.compare_runs(_plain(), _plain(out="")).pop()
    assert "files differ" in run.compare_runs(_plain(), _plain(files=("b.pt",))).pop()


def test_the_original_runs_again_until_its_own_randomness_shows():
    """The rewrite printed one line more; the first rerun of the original printed as the first run, the
    second did not: the original is no yardstick, and the stdout difference goes (other reasons stay).
    An original that prints the same every time keeps the difference after ORIGINAL_RERUNS reruns."""
    first = _plain(out="saved\nloss 0.5\n")
    differences = ["stdout differs: +saved", "files differ: only original ['a.pt'], only rewrite []"]
    runs = iter([_plain(out="saved\nloss 0.7\n"), _plain(out="loss 0.7\n"), _plain(out="never asked\n")])
    kept, own = run.without_own_randomness(first, differences, lambda: next(runs))
    assert kept == differences[1:] and own and own[0].startswith("stdout differs"), (kept, own)
    assert next(runs)["stdout"] == "never asked\n"  # it stopped at the run that differed
    calls = []
    kept, own = run.without_own_randomness(
        first, differences, lambda: calls.append(1) or _plain(out="saved\nloss 0.9\n")
    )
    assert (kept, own, len(calls)) == (differences, [], run.ORIGINAL_RERUNS)
    assert run.without_own_randomness(first, differences[1:], lambda: 1 / 0) == (differences[1:], [])


def _single(**kw):
    r = {
        "kind": "single",
        "original": _plain(),
        "apply": {"changed": True, "parses": True, "idempotent": True},
        "rewrite_single": _plain(),
        "single_differences": [],
        "verify": {"checks": {"completes": "pass", "ddp": "pass", "shards": "pass", "single": "n/a"}},
    }
    r.update(kw)
    return r


def test_classify_single():
    assert run.classify(_single()) == []
    assert run.classify(_single(original=_plain(rc=1))) == ["original-fails"]
    assert run.classify(_single(apply={"error": "boom"})) == ["apply-error"]
    assert run.classify(_single(apply={"changed": False})) == ["unconverted"]
    assert run.classify(_single(apply={"changed": True, "parses": False})) == ["rewrite-syntax"]
    # a rewrite that ddpfix itself reports as breaking the DDP contract is not a pass, whatever verify says
    incomplete = {"changed": True, "parses": True, "idempotent": True, "incomplete": ["t.py:9: incomplete: ..."]}
    assert run.classify(_single(apply=incomplete)) == ["incomplete"]
    bad = _single(
        apply={"changed": True, "parses": True, "idempotent": False},
        single_differences=["stdout differs"],
        verify={"checks": {"completes": "fail", "shards": "fail", "ddp": "fail", "params": "pass"}},
    )
    assert run.classify(bad) == [
        "not-idempotent",
        "rewrite-differs-single",
        "verify-completes-fail",
        "verify-ddp-fail",
        "verify-shards-fail",
    ]
    assert run.classify(_single(rewrite_single=_plain(rc=1))) == ["rewrite-breaks-single"]
    assert run.classify(_single(verify={"error": "no json"})) == ["verify-error"]
    assert run.classify({"kind": "single", "setup_error": "no mirror"}) == ["setup-error"]


def test_classify_ddp():
    base = {"kind": "ddp", "original": None, "false_findings": [], "unexpected_changes": []}
    assert run.classify(base) == []
    assert run.classify({**base, "false_findings": [{"code": "DDP406", "line": 3}], "unexpected_changes": [3]}) == [
        "false-finding",
        "ddp-script-changed",
    ]
    assert run.classify({**base, "original": _plain(rc=2)}) == ["original-fails"]


def test_judge_findings_counts_duplicates_as_false():
    findings = [{"code": "DDP006", "line": 5}, {"code": "DDP006", "line": 5}, {"code": "DDP406", "line": 9}]
    true, false = run.judge_findings(findings, [{"code": "DDP006", "line": 5, "reason": "r"}])
    assert true == findings[:1] and false == findings[1:]


def test_fix_lines_and_changed_lines():
    f = {
        "edits": [
            {"line": 4, "col": 1, "end_line": 4, "end_col": 1},
            {"line": 10, "col": 1, "end_line": 12, "end_col": 1},
        ]
    }
    assert run.fix_lines(f) == [4, 10, 11]
    assert run.changed_lines("a\nb\nc\n", "a\nB\nc\n") == [2]
    assert run.changed_lines("a\nc\n", "a\nb\nc\n") == [2]


def test_recipes_build_small_data(tmp_path):
    steps = [
        {"kind": "mnist", "root": "data", "n_train": 4, "n_test": 2},
        {"kind": "text", "path": "input.txt", "chars": 300},
        {"kind": "names", "path": "names.txt", "count": 5},
        {"kind": "csv_table", "path": "d.csv", "rows": 3, "cols": 2},
        {"kind": "file", "path": "cfg/a.yaml", "content": "x: 1\n"},
        {"kind": "shim"},
    ]
    for s in steps:
        assert recipes.validate_step(s) == []
    recipes.build(tmp_path, steps)
    raw = tmp_path / "data" / "MNIST" / "raw"
    assert (raw / "train-images-idx3-ubyte").stat().st_size == 16 + 4 * 28 * 28
    assert (raw / "t10k-labels-idx1-ubyte").stat().st_size == 8 + 2
    assert len((tmp_path / "input.txt").read_text()) >= 300
    assert len((tmp_path / "names.txt").read_text().split()) == 5
    assert (tmp_path / "d.csv").read_text().count("\n") == 3
    compile((tmp_path / "_shim" / "sitecustomize.py").read_text(), "sitecustomize.py", "exec")
    again = tmp_path / "again"
    recipes.build(again, steps[1:2])
    assert (again / "input.txt").read_text() == (tmp_path / "input.txt").read_text()  # fixed seed


def test_report_keeps_written_text_and_replaces_generated_part():
    doc = {
        "date": "2026-01-01 00:00 UTC",
        "ddpfix_commit": "abc",
        "torch": "2",
        "jobs": 1,
        "seconds": 10,
        "results": [
            {**_single(), "id": "x", "repo": "o/n", "classes": []},
            {
                "kind": "ddp",
                "id": "y",
                "repo": "o/m",
                "runs_on_cpu": False,
                "findings": [{"code": "DDP406", "line": 3, "message": "print"}],
                "true_findings": [],
                "false_findings": [{"code": "DDP406", "line": 3, "message": "print"}],
                "unexpected_changes": [3],
                "classes": ["false-finding", "ddp-script-changed"],
            },
        ],
    }
    doc["summary"] = run.summarise(doc["results"])
    manifest = [{"id": "x", "shape": "s"}, {"id": "y", "shape": "t"}]
    first = report.render(
        doc, manifest, existing="# Title\n\nwritten\n\n" + report.BEGIN + "\nold\n" + report.END + "\n\nanalysis\n"
    )
    assert first.startswith("# Title\n\nwritten\n") and first.rstrip().endswith("analysis")
    assert "old" not in first and "| y | DDP406 | 3 | print |" in first
    assert report.render(doc, manifest, existing=first) == first


def test_an_entry_a_safe_apply_leaves_unchanged_is_unconverted_never_a_pass():
    result = {"kind": "single", "original": {"rc": 0}, "apply": {"changed": False}, "repo": "o/n", "id": "x"}
    assert run.classify(result) == ["unconverted"]
    # not even a script with nothing to distribute: it stays unconverted, and is left out of the figures
    alone = {**result, "expect": "unconverted", "id": "y"}
    assert run.classify(alone) == ["unconverted"]
    # and one that the apply does change is wrong
    changed = _single(expect="unconverted")
    assert run.classify(changed) == ["converted-unexpectedly"]
    results = [{**r, "classes": run.classify(r)} for r in (result, alone, {**changed, "id": "z", "repo": "o/n"})]
    s = run.summarise(results)
    assert (s["counted"], s["pass"], s["single"], s["single_pass"]) == (1, 0, 1, 0)
    assert (s["nothing_to_distribute"], s["left_alone"]) == (2, 1)


def _completes(ranks, status="fail"):
    return {"name": "completes", "status": status, "data": {"ranks": ranks}}


def test_only_a_crash_after_every_rank_finished_is_an_exit_crash():
    assert run.exit_crash_only([_completes({"0": "finished", "1": "exit_crash"}), {"name": "ddp", "status": "pass"}])
    assert run.exit_crash_only([_completes({"0": "exit_stopped", "1": "exit_crash"})])
    assert not run.exit_crash_only([_completes({"0": "finished", "1": "finished"}, "pass")])
    assert not run.exit_crash_only([_completes({"0": "crashed", "1": "exit_crash"})])
    assert not run.exit_crash_only(
        [_completes({"0": "finished", "1": "exit_crash"}), {"name": "shards", "status": "fail"}]
    )


def test_verify_runs_again_on_fresh_files_after_an_exit_crash(tmp_path):
    tree = tmp_path / "verify"
    tree.mkdir()
    (tree / "train.py").write_text("print(1)\n")
    seen = []

    def once(entry, t):
        seen.append(sorted(p.name for p in t.iterdir()))
        (t / "ckpt.pt").write_text("written by the run")  # a rerun must not find it
        crashed = len(seen) < 2
        return {
            "ok": not crashed,
            "evidence": {"completes": ["rank 1 crashed while exiting"]} if crashed else {},
            "exit_crash_only": crashed,
        }

    runner = run.Runner.__new__(run.Runner)
    runner._verify_once = once
    res = runner.run_verify({"path": "train.py"}, tree)
    assert run.EXIT_CRASH_RERUNS == 1
    assert res["ok"] and len(res["exit_crash_reruns"]) == 1 and "exit_crash_only" not in res
    assert seen == [["train.py"]] * 2

    seen.clear()
    runner._verify_once = lambda entry, t: (
        seen.append(1),
        {"ok": False, "evidence": {"completes": ["x"]}, "exit_crash_only": True},
    )[1]
    res = runner.run_verify({"path": "train.py"}, tree)
    assert (
        not res["ok"]
        and len(seen) == run.EXIT_CRASH_RERUNS + 1
        and len(res["exit_crash_reruns"]) == run.EXIT_CRASH_RERUNS
    )


# ---------------------------------------------------------------- declared verify statuses


def _checks(**got):
    base = dict.fromkeys(run.VERIFY_CHECKS, "pass")
    return {"checks": {**base, **got, "single": "n/a"}}


def test_a_status_other_than_the_declared_one_fails_the_entry():
    declared = {"epoch_order": "n/a", "files": "n/a"}
    ok = _single(verify=_checks(epoch_order="n/a", files="n/a"), expected_checks=declared)
    assert run.classify(ok) == []
    # n/a where pass is expected: declared pass, and a check run but not declared is expected to pass
    assert run.classify(_single(verify=_checks(shards="n/a"), expected_checks={"shards": "pass"})) == [
        "verify-shards-n/a"
    ]
    assert run.classify(_single(verify=_checks(params="n/a"), expected_checks={})) == ["verify-params-n/a"]
    assert run.classify(_single(verify=_checks(epoch_order="n/a"))) == ["verify-epoch_order-n/a"]
    # a pass where the entry declared n/a is not what was judged either
    assert run.classify(_single(verify=_checks(files="pass", epoch_order="n/a"), expected_checks=declared)) == [
        "verify-unexpected"
    ]
    # a failure is a failure, whatever was declared
    both = _single(verify=_checks(probe="fail"), expected_checks=declared | {"epoch_order": "pass"})
    assert run.classify(both) == ["verify-probe-fail", "verify-unexpected"]  # and files pass, declared n/a
    mism = run.check_mismatches(_single(verify=_checks(probe="fail", files="n/a"), expected_checks={"files": "n/a"}))
    assert mism == [{"check": "probe", "expected": "pass", "got": "fail"}]
    assert run.classify(_single(verify=_checks(probe="fail", files="n/a"), expected_checks={"files": "n/a"})) == [
        "verify-probe-fail"
    ]
    # a verify that could not run has no statuses to compare: its own class says so
    assert run.classify(_single(verify={"error": "no json"}, expected_checks=declared)) == ["verify-error"]
    assert run.classify(_single(verify={"checks": {"single": "n/a"}}, expected_checks=declared)) == ["verify-error"]


def _entry(extra: str) -> str:
    return ENTRY.replace('checks = { completes = "pass", ddp = "pass", shards = "pass" }\n', extra + "\n")


@pytest.mark.parametrize(
    "extra, message",
    [
        ('checks = { shards = "n/a" }', r"shards = 'n/a' needs its reason"),
        ('checks = { files = "n/a" }', r"files = 'n/a' needs its reason"),
        ('checks = { shards = "fail" }\ncheck_reasons = { shards = "one batch" }', "shards cannot be expected to fail"),
        ('checks = { shard = "pass" }', "unknown check 'shard'"),
        ('checks = { shards = "ok" }', "shards must be one of"),
        ('checks = { shards = "pass" }\ncheck_reasons = { shards = "r" }', "'shards' is not declared other than"),
        ('checks = { files = "n/a" }\nblind = "yesterday"', "blind must be a date"),
    ],
)
def test_declared_statuses_are_validated(extra, message):
    with pytest.raises(run.ManifestError, match=message):
        run.load_manifest(text=_entry(extra))


def test_shards_other_than_pass_only_for_a_script_without_a_data_stream():
    (e,) = run.load_manifest(
        text=_entry('checks = { shards = "n/a" }\ncheck_reasons = { shards = "one inline batch: no data stream" }')
    )
    assert e["checks"]["shards"] == "n/a"
    # a single-GPU entry that is run and verified must say what each check should give
    with pytest.raises(run.ManifestError, match="declares its checks"):
        run.load_manifest(text=_entry(""))
    for exempt in ("verify = false", "runs_on_cpu = false", 'expect = "unconverted"'):
        assert run.load_manifest(text=_entry(exempt))
    with pytest.raises(run.ManifestError, match="only for kind = 'single'"):
        run.load_manifest(text=_entry('checks = { shards = "pass" }').replace('kind = "single"', 'kind = "ddp"'))


def test_every_single_entry_of_the_manifest_declares_its_checks():
    entries = [e for e in run.load_manifest() if run.needs_checks(e)]
    assert len(entries) >= 30
    assert all("checks" in e for e in entries)


# ---------------------------------------------------------------- already-distributed: recall and changes


def test_a_true_finding_check_did_not_report_is_counted():
    truth = [{"code": "DDP405", "line": 7, "reason": "r"}, {"code": "DDP003", "line": 9, "reason": "s"}]
    reported = [{"code": "DDP405", "line": 7}]
    missed = run.missed_findings(reported, truth)
    assert missed == truth[1:]
    base = {"kind": "ddp", "id": "d", "repo": "o/d", "original": None, "findings": reported}
    r = {**base, "true_findings": reported, "false_findings": [], "missed_true": missed, "unexpected_changes": []}
    r["classes"] = run.classify(r)
    assert r["classes"] == ["missed-finding"]
    s = run.summarise([r])
    assert (s["ddp_true"], s["ddp_missed"], s["ddp_pass"]) == (1, 1, 0)


SCRIPT = "import torch\nmodel = Net()\nopt = make(model)\nfor x in data:\n    step(x)\nprint('done')\n"


def _edit(line, end_line=None, path="t.py"):
    return {"path": path, "line": line, "col": 1, "end_line": end_line or line, "end_col": 1}


def test_every_changed_line_beyond_the_true_findings_fixes_counts():
    after = SCRIPT.replace("model = Net()", "model = DDP(Net())").replace(
        "print('done')", "if RANK == 0:\n    print('done')"
    )
    true = [{"code": "DDP301", "line": 2, "edits": [_edit(2, 3)]}]
    # the print guard belongs to no finding at all (not even a false one): it is still a change beyond
    assert run.changes_beyond({"t.py": SCRIPT}, {"t.py": after}, "t.py", true, []) == [6]
    guard = {"code": "DDP406", "line": 6, "edits": [_edit(6, 7)]}
    assert run.changes_beyond({"t.py": SCRIPT}, {"t.py": after}, "t.py", [*true, guard], []) == []
    # a module the apply edited is compared too
    before = {"t.py": SCRIPT, "utils.py": "def f():\n    return 1\n"}
    changed = {"t.py": after, "utils.py": "def f():\n    return 2\n"}
    assert run.changes_beyond(before, changed, "t.py", [*true, guard], []) == ["utils.py:2"]
    module_fix = {"code": "DDP401", "line": 4, "edits": [_edit(2, path="utils.py")]}
    assert run.changes_beyond(before, changed, "t.py", [*true, guard, module_fix], []) == []


def test_a_rules_edit_of_its_false_finding_is_not_allowed_by_its_true_one():
    after = SCRIPT.replace("opt = make(model)", "opt = make(model)  # a").replace("    step(x)", "    step(x)  # b")
    edits = [_edit(3), _edit(5)]  # the rule's fix edits both of its findings at once
    true = [{"code": "DDP006", "line": 3, "edits": edits}]
    false = [{"code": "DDP006", "line": 5, "edits": edits}]
    assert run.changes_beyond({"t.py": SCRIPT}, {"t.py": after}, "t.py", true, false) == [5]
    r = {"kind": "ddp", "original": None, "false_findings": false, "unexpected_changes": [5]}
    assert run.classify(r) == ["false-finding", "ddp-script-changed"]


# ---------------------------------------------------------------- blind subset, incomplete ones, clean tree


def _doc(results, **kw):
    for r in results:
        r.setdefault("classes", run.classify(r))
    doc = {"date": "2026-01-01 00:00 UTC", "ddpfix_commit": "abc", "tree_clean": True, "dirty": [], "results": results}
    doc.update(kw)
    doc["summary"] = run.summarise(results)
    return doc


def _blind_doc(**kw):
    incomplete = {
        "changed": True,
        "parses": True,
        "idempotent": True,
        "incomplete": ["t.py:9: incomplete: DDP409 sums"],
    }
    return _doc(
        [
            {**_single(), "id": "seen-pass", "repo": "o/a"},
            {**_single(apply=incomplete), "id": "seen-incomplete", "repo": "o/a"},
            {**_single(), "id": "new-pass", "repo": "o/b", "blind": "2026-01-01"},
            {**_single(verify=_checks(shards="n/a")), "id": "new-fail", "repo": "o/c", "blind": "2026-01-01"},
            {**_single(original=_plain(rc=1, out="")), "id": "broken", "repo": "o/c", "blind": "2026-01-01"},
        ],
        **kw,
    )


def test_blind_figures_are_kept_apart_from_the_in_sample_ones():
    s = _blind_doc()["summary"]
    assert (s["pass"], s["counted"]) == (2, 4)
    assert (s["in_sample"]["pass"], s["in_sample"]["counted"], s["in_sample"]["entries"]) == (1, 2, 2)
    assert (s["blind"]["pass"], s["blind"]["counted"], s["blind"]["entries"]) == (1, 2, 3)
    text = report.render_results(_blind_doc(), [])
    assert "| passing (counted ones) | 2 / 4 (50%) | 1 / 2 (50%) | 1 / 2 (50%) |" in text
    assert "| new-fail (blind) |" in text and "shards n/a (expected pass)" in text


def test_the_report_lists_incomplete_rewrites_and_uncounted_entries_with_their_reason():
    text = report.render_results(_blind_doc(), [])
    incomplete = text.split("### Incomplete rewrites")[1].split("###")[0]
    assert "| seen-incomplete | DDP409 sums |" in incomplete and "seen-pass" not in incomplete
    uncounted = text.split("### Entries not counted as runnable")[1].split("###")[0]
    assert "| broken | single | the original fails with its recipe: exit 1 |" in uncounted
    assert "new-fail" not in uncounted


def _git(cwd, *args):
    import subprocess

    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_tree_state_sees_uncommitted_changes(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    assert run.tree_state(tmp_path)["tree_clean"] is True
    (tmp_path / "a.py").write_text("x = 2\n")
    state = run.tree_state(tmp_path)
    assert state["tree_clean"] is False and state["ddpfix_commit"].endswith("+dirty")
    assert state["dirty"] == [" M a.py"]


def test_publishing_a_run_from_a_dirty_tree_is_refused(tmp_path, capsys):
    import json

    results = tmp_path / "results.json"
    md = tmp_path / "realworld.md"
    results.write_text(json.dumps(_blind_doc(tree_clean=False, dirty=[" M ddpfix/engine.py"])))
    assert run.main(["--render", str(results), "--markdown", str(md)]) == 2
    assert not md.exists() and "uncommitted changes ( M ddpfix/engine.py)" in capsys.readouterr().err
    assert run.main(["--render", str(results), "--markdown", str(md), "--allow-dirty"]) == 0
    text = md.read_text()
    assert "**Not from a clean tree** (published with --allow-dirty)" in text and "` M ddpfix/engine.py`" in text
    # results that do not say whether the tree was clean are not published either
    legacy = {k: v for k, v in _blind_doc().items() if k not in ("tree_clean", "dirty")}
    results.write_text(json.dumps(legacy))
    md.unlink()
    assert run.main(["--render", str(results), "--markdown", str(md)]) == 2 and not md.exists()
    results.write_text(json.dumps(_blind_doc()))
    assert run.main(["--render", str(results), "--markdown", str(md)]) == 0
    assert "Not from a clean tree" not in md.read_text()


def test_an_inserted_block_may_slide_over_equal_lines():
    before = "import os\n\n\nX = 1\n"
    after = "import os\n\n\nRANK = 0\n\n\nX = 1\n"  # the fix inserted "\n\nRANK = 0\n" after line 1
    assert run.changed_lines(before, after) == [4]
    fix = [{"code": "DDP005", "line": 9, "edits": [_edit(2)]}]
    assert run.changes_beyond({"t.py": before}, {"t.py": after}, "t.py", fix, []) == []
    far = [{"code": "DDP005", "line": 9, "edits": [_edit(1)]}]  # before line 1 is not a place it slides to
    assert run.changes_beyond({"t.py": before}, {"t.py": after}, "t.py", far, []) == [4]


# ---------------------------------------------------------------- verdicts change in commits of their own

history = _load("history")


def _commit(repo, files: dict, message: str):
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        _git(repo, "add", name)
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


def test_a_verdict_changed_with_the_rule_code_is_named(tmp_path):
    _git(tmp_path, "init", "-q")
    m = "bench/realworld/manifest.toml"
    _commit(tmp_path, {m: ENTRY, "ddpfix/rule.py": "A = 1\n"}, "first")  # new entries with their first code
    _commit(tmp_path, {"ddpfix/rule.py": "A = 2\n", m: ENTRY + "notes = 'n'\n"}, "rule, and a note")
    assert [v["ids"] for v in history.violations(tmp_path)] == [["x"]]  # the first commit added verdicts
    first = _git_out(tmp_path, "rev-list", "--max-parents=0", "HEAD")
    assert history.violations(tmp_path, first) == []  # a note is not a verdict
    judged = ENTRY.replace('shards = "pass" }', 'shards = "n/a" }\ncheck_reasons = { shards = "one batch" }')
    _commit(tmp_path, {m: judged}, "verdict alone")
    assert history.violations(tmp_path, first) == []
    _commit(tmp_path, {m: judged.replace('"one batch"', '"one fixed batch"'), "ddpfix/rule.py": "A = 3\n"}, "both")
    (v,) = history.violations(tmp_path, first)
    assert v["ids"] == ["x"] and v["files"] == ["ddpfix/rule.py"]


def _git_out(cwd, *args):
    import subprocess

    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_no_verdict_of_the_repository_changed_with_the_rule_code_since_the_rule():
    # 8a674a7 judged skj092's device line a true DDP005 in the commit that changed DDP003: the last such
    # commit, before verdicts had to change alone
    base = "8a674a77a166589ada15c787a6152b60ea86d1ca"
    try:
        _git(HERE.parent, "cat-file", "-e", base + "^{commit}")
    except Exception:  # noqa: BLE001 - a copy without this history (an archive, a shallow clone)
        pytest.skip("the repository's history is not here")
    assert history.violations(HERE.parent, base) == []


def test_a_run_with_unsafe_fixes_is_never_the_published_figure(tmp_path, capsys):
    import json

    results, md = tmp_path / "results.json", tmp_path / "realworld.md"
    results.write_text(json.dumps({**_blind_doc(), "unsafe_fixes": True}))
    assert run.main(["--render", str(results), "--markdown", str(md)]) == 2
    assert not md.exists() and "--unsafe-fixes" in capsys.readouterr().err
    runner = run.Runner(tmp_path, sys.executable, tmp_path / "runs", unsafe_fixes=True)
    assert runner.apply == ["apply", "--unsafe-fixes"]
    assert run.Runner(tmp_path, sys.executable, tmp_path / "runs").apply == ["apply"]
