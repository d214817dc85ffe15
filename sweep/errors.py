"""Bad input: one line naming the field and what is allowed; the CLI prints it and exits with code 2."""
from proxies.data import DataError
from proxies.registry import ModelError
from trainer.config import ConfigError


class InputError(ValueError):
    """A bad flag or spec value; str() is one line naming the field."""


BAD_INPUT = (InputError, DataError, ModelError, ConfigError)
