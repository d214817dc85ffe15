"""A user's model whose builder raises at width 256 (an error of its own, not a ValueError naming a field), for the
boundary's tests: the command says it in one line, exit 2, and writes nothing."""
from proxies.base_shapes import mup_builder
from proxies.gpt import BASE_WIDTH, GPT


@mup_builder(base_width=BASE_WIDTH)
def gpt_failing_at_256(width: int, depth: int, parametrization: str = "mup", **options) -> GPT:
    if width == 256:
        raise RuntimeError("this model cannot be built at width 256")
    return GPT(width, depth, parametrization, **options)
