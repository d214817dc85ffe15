"""`sweep recipe CONFIG --to FORMAT`: the μP recipe of a RunConfig (a transferred full run, or any run) written for
torchtitan, Megatron Core, Hugging Face transformers, nanoGPT, or as JSON for `trainer.recipe.Recipe` in any torch loop.

A setting the framework cannot hold is refused in one line naming it and the framework (exit 2, nothing written):
never a half recipe. The file is written atomically; without --out the export goes to stdout.
"""
from __future__ import annotations

from pathlib import Path

from sweep.errors import InputError
from sweep.paths import check_out_file
from trainer.atomic import atomic_path
from trainer.config import ConfigError, RunConfig
from trainer.frameworks import export
from trainer.recipe import Recipe


def run_recipe(config: Path, fmt: str, out: Path | None) -> str:
    """The export's text, written to `out` when given."""
    check_out_file(out)
    try:
        cfg = RunConfig.load(config)
    except (ConfigError, OSError) as err:
        raise InputError(f"CONFIG: {err}") from None
    try:
        source = cfg.data.open(cfg.seed)
        text = export(Recipe.from_config(cfg, source.model_options()), fmt)
    except ValueError as err:  # RecipeError, ModelError, ConfigError: one line naming the field or the setting
        raise InputError(str(err)) from None
    if out is not None:
        with atomic_path(out) as tmp:
            Path(tmp).write_text(text)
    return text
