"""One full run, below the commands that start or read it (`train`, `launch`, `status`, `compare`, `demo`):
training a RunConfig in this process (`train.py`, the body of `sweep train`), RUN_DIR/launch.json and what a run
folder says (`record.py`), the predicted loss a transferred run is held to (`prediction.py`)."""
