"""The command line as typed, below the commands and above what they share: each single-valued option given once,
and the parameters the line gave (`repeats.py`); every flag's value checked before a command starts (`values.py`)."""
