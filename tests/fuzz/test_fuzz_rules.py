"""Property-based, on the rules themselves (fast: no command runs): whatever text Hypothesis makes up,
- a SLURM or Ray setting either is refused with one line naming its flag, or, admitted, stays on its one `#SBATCH`
  line of the script submitit writes, holding no character a shell or sbatch reads as syntax;
- a name read back from a storage or a run's files either is refused, or names one folder inside the root and reads
  the same escaped in a page.
"""
from __future__ import annotations

import html
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.cluster.settings import RUN, WORKERS
from sweep.cluster.settings import settings as backend_settings
from sweep.errors import InputError
from sweep.paths import stored_name as check_stored
from tests.fuzz.hostile import scheduler_text, stored_name

EXAMPLES = int(os.environ.get("SWEEP_FUZZ_EXAMPLES", "0")) or 300
SHELL_SYNTAX = set("\n\r\t\x00;&|$`'\"\\ #(){}<>*?!~")
FUZZ = settings(max_examples=EXAMPLES, derandomize=not os.environ.get("SWEEP_FUZZ_EXAMPLES"), database=None,
                deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(field=st.sampled_from(["partition", "account", "qos"]), entry=st.sampled_from([WORKERS, RUN]),
       text=scheduler_text())
def test_a_slurm_text_is_refused_naming_its_flag_or_stays_on_its_sbatch_line(field, entry, text):
    from submitit.slurm.slurm import _make_sbatch_string

    try:
        chosen = backend_settings("slurm", entry, {field: text})
    except InputError as err:
        assert str(err).startswith(f"--{field}: ") and "\n" not in str(err)
        return
    assert not SHELL_SYNTAX & set(text), text
    script = _make_sbatch_string(command="true", folder=Path("/tmp/logs"), **{field: getattr(chosen, field)})
    assert [line for line in script.splitlines() if field in line] == [f"#SBATCH --{field}={text}"]


@FUZZ
@given(text=scheduler_text())
def test_a_ray_address_is_refused_naming_its_flag_or_is_host_and_port(text):
    try:
        chosen = backend_settings("ray", WORKERS, {"address": text})
    except InputError as err:
        assert str(err).startswith("--address: ")
        return
    assert not SHELL_SYNTAX & set(text) and (text == "auto" or text.rpartition(":")[2].isdigit()), chosen


@FUZZ
@given(name=stored_name())
def test_a_stored_name_is_refused_or_names_one_folder_inside_the_root_and_needs_no_escaping(name, tmp_path_factory):
    root = Path("/srv/results")
    try:
        check_stored(name, "study", "sqlite:///x.db")
    except InputError as err:
        assert str(err).startswith("study: sqlite:///x.db holds the name ") and "\n" not in str(err)
        return
    folder = root / "sweep" / "plots" / name
    assert folder.parent == root / "sweep" / "plots" and os.path.normpath(folder) == str(folder)
    assert html.escape(name) == name and len(name.encode()) <= 255


@pytest.mark.parametrize("name", ["../../../X", "<script>alert(1)</script>", "ro\n<b>x"])
def test_the_known_stored_names_are_refused(name):
    with pytest.raises(InputError):
        check_stored(name, "study", "s")
