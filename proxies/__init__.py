"""The μP model zoo and its data sources."""
from proxies.base_shapes import mup_builder, save_base_shapes
from proxies.registry import ZOO, build_model, resolve_builder

__all__ = ["ZOO", "build_model", "mup_builder", "resolve_builder", "save_base_shapes"]
