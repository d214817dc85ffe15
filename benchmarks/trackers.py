"""What a logged row costs with each tracker: milliseconds per row sent through `trainer.tracking.Trackers`.

    .venv/bin/python benchmarks/trackers.py [--rows 200]

No tracker (nothing sent, nothing recorded), then each tracker alone: TensorBoard, W&B offline, MLflow against a
tracking server this script starts on loopback with a sqlite store. A row is the trainer's (12 numbers); the time
includes the rewrite of `trackers.json` after each row. Prints a table: tracker, ms per row, and what that adds to
10 steps of 100 ms (log_every 10).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.services import free_port  # noqa: E402 (a free loopback port)
from trainer.config import RunConfig  # noqa: E402
from trainer.tracking import Trackers  # noqa: E402


def mlflow_server(folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([str(Path(sys.executable).with_name("mlflow")), "server", "--backend-store-uri",
                             f"sqlite:///{folder / 'mlflow.db'}", "--default-artifact-root", str(folder / "art"),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"})
    url = f"http://127.0.0.1:{port}"
    while True:  # polls /health
        try:
            if urllib.request.urlopen(f"{url}/health", timeout=5).status == 200:
                return proc, url
        except OSError:
            time.sleep(0.2)


def per_row(folder: Path, logging: dict | None, rows: int) -> float:
    cfg = RunConfig.parse({"steps": rows, "output": {"root": str(folder), "study": "bench", "run": "r"},
                           **({"logging": logging} if logging else {})})
    trackers = Trackers(cfg, cfg.run_dir())
    start = time.perf_counter()
    for step in range(1, rows + 1):
        trackers.log({"step": step, "tokens": step * 1024, "wall_time": step * 0.1, "lr": 1e-3, "train_loss": 3.0,
                      "grad_norm": 1.0, "tokens_per_s": 1e4, "mfu": 0.4, "val_loss": 3.1, "noise_scale": 50.0,
                      "act_max.blocks.0": 2.0, "attn_logit_max.blocks.0": 5.0, "grad_norm.lr1-decay": 0.5})
    elapsed = time.perf_counter() - start
    trackers.close("completed")
    return elapsed / rows * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        proc, url = mlflow_server(root)
        try:
            cases = {"none": None, "tensorboard": {"tensorboard": str(root / "tb")},
                     "wandb (offline)": {"wandb": {"mode": "offline"}},
                     "mlflow (loopback server)": {"mlflow": {"tracking_uri": url}}}
            print(f"{'tracker':<26} {'ms/row':>8} {'share of 10 × 100 ms steps':>28}")
            for i, (name, logging) in enumerate(cases.items()):
                ms = per_row(root / str(i), logging, args.rows)
                print(f"{name:<26} {ms:8.2f} {ms / 1000:27.2%}")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


if __name__ == "__main__":
    main()
