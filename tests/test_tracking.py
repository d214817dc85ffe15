"""Trackers (`logging:`): TensorBoard, MLflow and W&B mirror the curve, each logged step once, and never stop a run.

Real parts: an MLflow tracking server on loopback (sqlite backend store) read back through its REST API, TensorBoard's
own event file reader, W&B's offline run file (its records read back with W&B's protobuf schema).
The classic bugs: a resume replays the steps after its checkpoint, whose rows the killed run already sent (each
tracker shows them twice); a resumed run opens a second MLflow or W&B run; a tracker that fails crashes the run or
floods the log; a password in a tracking URI written into config.yaml.
"""
import errno
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.services import free_port, missing
from tests.sweep_helpers import run_sweep, sweep_env
from trainer.checkpoint import list_checkpoints, step_of
from trainer.config import ConfigError, RunConfig
from trainer.curves import read_curves
from trainer.loop import train

STEPS = 30


def config(root: Path, mlflow_url: str | None = None, **changes) -> dict:
    return {
        "model": {"name": "gpt", "width": 32, "depth": 1},
        "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 5000}},
        "batch_size": 4, "steps": STEPS, "log_every": 1, "device": "cpu",
        "schedule": {"kind": "constant"},
        "eval": {"every": 10, "batches": 1, "noise_scale_batches": 0},
        "checkpoint": {"every": 10},
        "output": {"root": str(root / "out"), "study": "track", "run": "r"},
        "provenance": {"study": "sw-w32-mup", "trial": 3},
        "logging": {"tensorboard": str(root / "tb"), "wandb": {"mode": "offline"},
                    **({"mlflow": {"tracking_uri": mlflow_url, "experiment": "exp"}} if mlflow_url else {})},
        **changes,
    }


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` with a sqlite backend store on a free loopback port; ready once /health answers."""
    folder = tmp_path_factory.mktemp("mlflow")
    exe = Path(sys.executable).with_name("mlflow")
    if not exe.exists():
        missing("mlflow (the server)")
    port, log = free_port(), open(folder / "server.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([str(exe), "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                             "--default-artifact-root", str(folder / "artifacts"), "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1"], cwd=folder, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=log,
                            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})  # no job workers
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # a bound for a loaded machine, not a wait: it polls
        while True:
            assert proc.poll() is None, (folder / "server.log").read_text()[-2000:]
            try:
                if urllib.request.urlopen(f"{url}/health", timeout=5).status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the MLflow server did not answer /health"
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the server and its workers, in their own session
        proc.wait()
        log.close()


def rest(url: str, path: str, **query) -> dict:
    with urllib.request.urlopen(f"{url}/api/2.0/mlflow/{path}?{urllib.parse.urlencode(query)}", timeout=30) as r:
        return json.loads(r.read())


def mlflow_runs(url: str, experiment: str) -> list[dict]:
    experiment_id = rest(url, "experiments/get-by-name", experiment_name=experiment)["experiment"]["experiment_id"]
    request = urllib.request.Request(f"{url}/api/2.0/mlflow/runs/search", method="POST",
                                     data=json.dumps({"experiment_ids": [experiment_id]}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read()).get("runs", [])


def mlflow_history(url: str, run_id: str, key: str) -> list[tuple[int, float]]:
    metrics = rest(url, "metrics/get-history", run_id=run_id, metric_key=key, max_results=10000)["metrics"]
    return sorted((int(m.get("step", 0)), m["value"]) for m in metrics)


def tensorboard_scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    """Every point of `tag` TensorBoard shows for the run in `folder`: its own accumulator reads the event files in
    order and applies a reopened writer's purge step (the killed run's events from that step on are hidden)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    return sorted((e.step, e.value) for e in accumulator.Scalars(tag))


def wandb_records(path: Path):
    """The protobuf records of a W&B run file (`run-ID.wandb`: a LevelDB-style log of 32 KiB blocks, each record
    in chunks behind a 7-byte header: checksum, length, type FULL 1 / FIRST 2 / MIDDLE 3 / LAST 4)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, chunks = path.read_bytes(), 7, b""
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        chunks += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(chunks)
            yield record
            chunks = b""


def wandb_history(run_dir: Path, key: str) -> tuple[list[tuple[int, float]], list]:
    """`key`'s points over every offline run file of the run, and the run records (id, tags, config)."""
    points, runs = [], []
    for path in sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb")):
        for record in wandb_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                runs.append(record.run)
            if kind == "history":
                items = {item.key or "/".join(item.nested_key): json.loads(item.value_json)
                         for item in record.history.item}
                if key in items:
                    points.append((items["_step"], items[key]))
    return sorted(points), runs


def write(root: Path, data: dict) -> Path:
    path = root / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def sent(cfg: RunConfig) -> int:
    path = cfg.run_dir() / "trackers.json"
    try:
        return json.loads(path.read_text())["sent"]
    except (FileNotFoundError, json.JSONDecodeError):
        return 0


def killed_in_the_window(path: Path, doubt: int) -> str:
    """`sweep train PATH --resume`, killed with SIGKILL right after every tracker received step `doubt` and before
    the run recorded it as sent: the instant a kill leaves a step in doubt."""
    return ("import os, signal, sys, runpy\n"
            "import trainer.tracking as tracking\n"
            "send = tracking.Trackers.send\n"
            "def send_then_die(self, tracker, step, metrics):\n"
            "    send(self, tracker, step, metrics)\n"
            f"    if step == {doubt} and tracker is self.live[-1]: os.kill(os.getpid(), signal.SIGKILL)\n"
            "tracking.Trackers.send = send_then_die\n"
            f"sys.argv = ['sweep', 'train', {str(path)!r}, '--resume']\n"
            "runpy.run_module('sweep', run_name='__main__')\n")


def test_every_logged_step_reaches_each_tracker_once_across_a_kill_9_and_resume(tmp_path, mlflow_server):
    """The kill lands where the classic bug shows: step 14 has reached every tracker, the run has not recorded it."""
    data = config(tmp_path, mlflow_server)
    cfg = RunConfig.parse(data)
    path = write(tmp_path, data)
    killed = subprocess.run([sys.executable, "-c", killed_in_the_window(path, 14)], env=sweep_env(tmp_path),
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    record = json.loads((cfg.run_dir() / "trackers.json").read_text())
    assert (record["sent"], record["sending"]) == (13, 14)
    assert step_of(list_checkpoints(cfg.run_dir() / "checkpoints")[-1]) == 10  # the resume replays 11–14

    again = run_sweep(tmp_path, "train", path, "--resume", timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    curve = read_curves(cfg.curves_root(), run=cfg.run_id())
    want = list(zip(curve["step"], curve["train_loss"], strict=True))
    assert [s for s, _ in want] == list(range(1, STEPS + 1))

    tb = tensorboard_scalars(tmp_path / "tb" / "track" / "r", "train_loss")
    assert [s for s, _ in tb] == [s for s, _ in want]  # each step once
    assert [v for _, v in tb] == pytest.approx([v for _, v in want], rel=1e-6)  # float32 in event files

    (run,) = mlflow_runs(mlflow_server, "exp")  # the resume continued the run, no second one
    assert mlflow_history(mlflow_server, run["info"]["run_id"], "train_loss") == want
    assert run["info"]["status"] == "FINISHED" and run["info"]["run_name"] == "r"
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert (tags["study"], tags["trial"], tags["kind"]) == ("sw-w32-mup", "3", "proxy")
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    assert params["optimizer.lr"] == str(cfg.optimizer.lr) and params["model.width"] == "32"

    points, runs = wandb_history(cfg.run_dir(), "train_loss")
    # W&B's offline writer runs in its own service process and buffers: what it had not written when the run was
    # killed is lost, and the step in doubt is not sent again (docs/full-runs.md). Each step it has is there once,
    # and every step after the one in doubt is.
    assert sorted(set(points)) == points and set(points) <= set(want)
    assert [s for s, _ in points if s > 14] == list(range(15, STEPS + 1))
    assert len({r.run_id for r in runs}) == 1 and "study:sw-w32-mup" in runs[0].tags and "trial:3" in runs[0].tags


def test_a_tracker_that_fails_never_stops_training_and_says_so_once(tmp_path, mlflow_server, capfd, monkeypatch):
    """The MLflow run is deleted on the server mid-run (every later write is refused); TensorBoard's disk fills
    from step 3 (every later write fails): the run completes with its whole curve, one warning per tracker."""
    from torch.utils.tensorboard import SummaryWriter

    cfg = RunConfig.parse(config(tmp_path, mlflow_server, steps=8, logging={
        "tensorboard": str(tmp_path / "tb"), "mlflow": {"tracking_uri": mlflow_server, "experiment": "failing"}}))
    add_scalar = SummaryWriter.add_scalar

    def full_from_3(writer, tag, value, step, *args, **kwargs):
        if step >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return add_scalar(writer, tag, value, step, *args, **kwargs)

    def delete_at_3(row):
        if row["step"] == 3:
            from mlflow import MlflowClient

            MlflowClient(mlflow_server).delete_run(json.loads((cfg.run_dir() / "trackers.json").read_text())
                                                   ["ids"]["mlflow"])

    monkeypatch.setattr(SummaryWriter, "add_scalar", full_from_3)
    assert train(cfg, on_log=delete_at_3).status == "completed"
    assert read_curves(cfg.curves_root(), run=cfg.run_id())["step"].tolist() == list(range(1, 9))
    err = capfd.readouterr().err
    assert err.count("logging.mlflow failed") == 1 and err.count("logging.tensorboard failed") == 1, err


def test_a_tracker_asked_for_but_not_installed_is_one_line_exit_2_and_nothing_written(tmp_path):
    path = write(tmp_path, config(tmp_path, logging={"wandb": {"mode": "offline"}}))
    block = ("import sys, runpy\n"
             "class NoWandb:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'wandb': raise ModuleNotFoundError(name)\n"
             "sys.meta_path.insert(0, NoWandb())\n"
             f"sys.argv = ['sweep', 'train', {str(path)!r}]\n"
             "runpy.run_module('sweep', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", block], env=sweep_env(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == ["error: logging.wandb: wandb is not installed; "
                                               "pip install 'mup-sweep[wandb]', or remove logging.wandb"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("field", ["tensorboard", "wandb"])
def test_a_tracker_folder_that_cannot_be_written_is_one_line_exit_2_and_nothing_written(tmp_path, field):
    """Found by a hostile user: a tracker folder that is a file trained with a warning instead of being refused."""
    (tmp_path / "taken").write_text("a file")
    logging = {"tensorboard": str(tmp_path / "taken")} if field == "tensorboard" else {
        "wandb": {"mode": "offline", "dir": str(tmp_path / "taken" / "wandb")}}
    proc = run_sweep(tmp_path, "train", write(tmp_path, config(tmp_path, logging=logging)))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: logging.{field}") and "is a file, not a folder" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("uri", ["http://alice:hunter2@mlflow.example:5000", "https://mlflow.example/?token=hunter2",
                                 "databricks://ws?password=hunter2", "https://mlflow.example/?api_key=hunter2",
                                 "http://alice%3Ahunter2%40mlflow.example", "https://mlflow.example/?pass%77ord=hunter2",
                                 # found by a hostile user: accepted, written to config.yaml and echoed in a warning
                                 "http://hunter2@127.0.0.1:5999", "http://127.0.0.1:5999/?auth=hunter2",
                                 "https://acct.blob.example/c?sig=hunter2", "http:\\\\u:hunter2@127.0.0.1:5999"])
def test_an_mlflow_uri_holding_a_secret_is_refused_without_showing_it(tmp_path, uri):
    with pytest.raises(ConfigError) as err:
        RunConfig.parse(config(tmp_path, uri))
    assert str(err.value).startswith("logging.mlflow.tracking_uri: holds a password or token")
    assert "hunter2" not in str(err.value) and "alice" not in str(err.value)


def test_trackers_neither_rename_a_run_nor_appear_in_a_config_without_them(tmp_path):
    with_trackers = RunConfig.parse(config(tmp_path, output={"root": str(tmp_path), "study": "s"}))
    without = RunConfig.parse({**config(tmp_path, output={"root": str(tmp_path), "study": "s"}), "logging": None})
    assert with_trackers.run_id() == without.run_id()
    assert "logging" not in without.to_yaml() and RunConfig.from_yaml(with_trackers.to_yaml()) == with_trackers


def test_a_guard_rewind_reaches_tensorboard_as_an_event_and_no_step_twice(tmp_path):
    """The spike guard rewinds from step 10 to 6: the trackers already have steps 7–9 of the abandoned branch (a
    tracker cannot take a point back); the rewound run's 7–9 are not sent again, the rewind is a text event at
    step 10, and every step reaches TensorBoard once."""
    from tests.test_guard import HOT_STEP, REWIND
    from tests.test_guard import config as guard_config

    cfg = RunConfig.parse(guard_config(tmp_path, REWIND, logging={"tensorboard": str(tmp_path / "tb")}))
    assert train(cfg).status == "completed"
    folder = tmp_path / "tb" / "g" / "r"
    assert [s for s, _ in tensorboard_scalars(folder, "train_loss")] == list(range(1, 17))
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util.tensor_util import make_ndarray

    texts = [(e.step, make_ndarray(v.tensor).item().decode()) for path in folder.glob("events.out.tfevents.*")
             for e in EventFileLoader(str(path)).Load() for v in e.summary.value if v.tag == "guard/text_summary"]
    assert [(step, json.loads(text)["kind"]) for step, text in texts] == [(HOT_STEP, "rewind")]
