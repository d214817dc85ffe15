"""The checkpoint registry: a part a caller registers with the run's TrainState (`train(…, extra_state=…)`) is
checkpointed and resumed with the run's own state, with no change to the checkpoint code.

Classic bug: a counter kept beside the loop but missing from the checkpoint (the divergence streak once was)
starts over from zero after a kill -9, while the curve and the weights resume, so nothing else shows it.
Run as a script (`python -m tests.fault.test_train_state RUN.yaml`) it is the run that gets killed.
"""
import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from tests.fault.kill import CreateWatch, kill_session, promptly, wait_created
from tests.fault.test_kill_runs import STEPS, write_run
from trainer.checkpoint import list_checkpoints, load_checkpoint, step_of
from trainer.config import RunConfig
from trainer.loop import RunResult, train

REPO = Path(__file__).parents[2]


class LoggedRows:
    """Test-only training state: the rows the run has logged, over all the processes that trained it."""

    def __init__(self):
        self.count = 0  # checkpointed
        self.here = 0  # logged by this process

    def log(self, row: dict) -> None:
        self.count += 1
        self.here += 1

    def state_dict(self) -> dict:
        return {"count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.count = state["count"]


def counted_run(path: Path, resume: bool) -> tuple[RunResult, LoggedRows]:
    rows = LoggedRows()
    result = train(RunConfig.load(path), resume=resume, on_log=rows.log, extra_state={"logged_rows": rows})
    return result, rows


def test_a_registered_counter_survives_kill_9_and_resume(tmp_path):
    path = write_run(tmp_path, "counted")  # a row logged at every step, a checkpoint every 10
    cfg = RunConfig.load(path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "tests.fault.test_train_state", str(path)], env=env, cwd=tmp_path,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with closing(CreateWatch(tmp_path)) as watch, promptly():
            second = wait_created(proc, watch, "*/checkpoints/step-*.pt", timeout=120, nth=2)
            kill_session(proc)
    finally:
        if proc.poll() is None:
            kill_session(proc)
    assert second is not None, f"the run ended before its second checkpoint: {proc.stderr.read()}"
    assert not (cfg.run_dir() / "result.json").exists(), "the run finished before the kill"
    last = list_checkpoints(cfg.run_dir() / "checkpoints")[-1]
    assert load_checkpoint(last)["logged_rows"] == {"count": step_of(last)}  # saved with the step it belongs to

    result, rows = counted_run(path, resume=True)
    assert (result.status, result.step) == ("completed", STEPS)
    assert rows.here == STEPS - step_of(last)  # this process went on from the checkpoint…
    assert rows.count == STEPS  # …and so did the counter, rather than from zero
    final = list_checkpoints(cfg.run_dir() / "checkpoints")[-1]
    assert load_checkpoint(final)["logged_rows"] == {"count": STEPS}


if __name__ == "__main__":
    counted_run(Path(sys.argv[1]), resume=False)
