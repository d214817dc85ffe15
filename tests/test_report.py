"""`sweep report`: one offline HTML file whose every section renders in headless Chromium."""
import contextlib
import io
import re
import shutil
import subprocess
import sys

import pytest

from sweep.cli import main
from tests.sweep_helpers import run_sweep, write_spec

SECTIONS = ("coord-check", "history", "importance", "parallel", "verify", "transfer", "curves")


def in_process(root, *args) -> tuple[int, str]:
    """`sweep ARGS…` in this process with SWEEP_ROOT=root (a process of its own would import torch again; a sweep's
    workers spawn from this one); (exit code, stdout + stderr)."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        patch.setenv("SWEEP_ROOT", str(root))
        patch.chdir(root)
        patch.setattr(sys, "argv", ["sweep", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
    return exit_info.value.code, out.getvalue()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """coordinate check → proxy sweep → verify → transfer → the full run, on a tiny budget, in this process."""
    root = tmp_path_factory.mktemp("report")
    spec = write_spec(root, trials=3)
    for args in (("coord-check", "--model", "gpt", "--widths", "32,64", "--steps", "3", "--seeds", "1",
                  "--opt", "head_dim=16"),
                 ("proxy", spec, "--width", "16"),
                 ("verify", spec, "--widths", "16,32", "--values", "3e-3,1e-2,3e-2", "--seeds", "1",
                  "--refine", "0")):
        code, said = in_process(root, *args)
        assert code in (0, 1), said  # coord-check / verify verdicts may fail this small
    code, said = in_process(root, "transfer", spec, "--width", "32", "--steps", "50")
    assert code == 0, said
    code, said = in_process(root, "train", next((root / "tiny" / "transfer").glob("*.yaml")), "--quiet")
    assert code == 0, said
    return root, spec


def test_the_report_renders_every_section_offline_in_chromium(pipeline, browser):
    root, spec = pipeline
    code, said = in_process(root, "report", spec)
    assert code == 0, said
    page = root / "tiny" / "report.html"
    text = page.read_text()
    assert 'src="http' not in text and "<link" not in text  # nothing fetched
    assert 'class="missing"' not in text  # every step of the pipeline is in it
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    # found by an outside tester: the opening section's tables were escaped into text ("&lt;h3&gt;…")
    decide = re.search(r'<section id="decide">(.*?)</section>', dom, re.S).group(1)
    assert "<table>" in decide and "&lt;" not in decide, decide[:300]
    for key in SECTIONS:
        body = re.search(rf'<section id="{key}">(.*?)</section>', dom, re.S)
        assert body, key
        if key == "transfer":
            assert "provenance:" in body.group(1) and "trial_value:" in body.group(1)
        else:
            widths = re.findall(r'data-rendered="(\d+)"', body.group(1))
            assert widths and all(int(w) > 100 for w in widths), (key, body.group(1)[:300])
    shot = root / "report.png"
    subprocess.run([*browser, "--window-size=1100,3000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_a_report_before_verify_and_transfer_says_which_command_makes_each_section(tmp_path):
    spec = write_spec(tmp_path, trials=2)
    assert run_sweep(tmp_path, "proxy", spec, "--width", "16").returncode == 0
    done = run_sweep(tmp_path, "report", "tiny")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "tiny" / "report.html").read_text()
    for command in ("sweep coord-check --model gpt", "sweep verify tiny", "sweep transfer tiny --width W"):
        assert f"not run yet: <code>{command}" in text
    # found by an outside tester: a broken verify summary was refused only after the plots were written, and one
    # nested past the recursion limit was a traceback
    folder = tmp_path / "tiny-verify-lr"
    folder.mkdir()
    for broken in ('{"laws": {"mup": {"slope": "0.8", "at": [16, 32]}}}', "[" * 100_000 + "]" * 100_000):
        (folder / "summary.json").write_text(broken)
        shutil.rmtree(tmp_path / "tiny" / "plots", ignore_errors=True)
        before = sorted(tmp_path.rglob("*"))
        refused = run_sweep(tmp_path, "report", "tiny", "--out", tmp_path / "again.html")
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "verify summary" in refused.stderr
        assert sorted(tmp_path.rglob("*")) == before  # no plot, no page


def test_a_ladder_at_a_second_width_has_its_own_section_beside_the_proxys(tmp_path):
    """Each ladder folder shows its law: the proxy width's, and a second width's (`--ladder-width`) titled by it."""
    from sweep.results.report import ladder_section
    from sweep.rules.summary import write_summary

    for folder, width in (("tiny-verify-lr-across-steps", 16), ("tiny-verify-lr-across-steps-w32", 32)):
        law = {"slope": -0.25 * width / 16, "low": -1.0, "high": 0.0, "at": [20, 40], "certificate": "horizon",
               "level": 0.95}
        write_summary(tmp_path / folder, {"axis": "steps", "widths": [width], "laws": {"mup": law}})
        (tmp_path / folder / "figure1.png").write_bytes(b"\x89PNG")
    proxy, second = ladder_section(tmp_path, "tiny", "steps", None), ladder_section(tmp_path, "tiny", "steps", 32)
    assert "<h3>across steps</h3>" in proxy and "s = -0.250" in proxy
    assert "<h3>across steps at width 32</h3>" in second and "s = -0.500" in second


def test_a_horizon_ladder_at_another_batch_has_its_own_section(tmp_path):
    """A horizon ladder at the target's batch (`--ladder-batch`) is a law transfer applies: the report shows it,
    titled by its batch, beside the proxy's."""
    from sweep.results.report import ladder_section, ladders
    from sweep.rules.summary import write_summary

    for folder, batch in (("tiny-verify-lr-across-steps", 8), ("tiny-verify-lr-across-steps-b32", 32)):
        law = {"slope": -0.4 * 8 / batch, "low": -1.0, "high": 0.0, "at": [20, 40], "certificate": "horizon",
               "level": 0.95}
        shapes = [{"at": at, "batch_size": batch, "tokens": at * batch} for at in (20, 40)]
        write_summary(tmp_path / folder, {"axis": "steps", "shapes": shapes, "laws": {"mup": law}})
        (tmp_path / folder / "figure1.png").write_bytes(b"\x89PNG")
    assert ("steps", {"batch": 32}) in ladders(tmp_path, "tiny") and ("steps", {}) in ladders(tmp_path, "tiny")
    other = ladder_section(tmp_path, "tiny", "steps", batch=32)
    assert "<h3>across steps at batch 32</h3>" in other and "s = -0.100" in other
