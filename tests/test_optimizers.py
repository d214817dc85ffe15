"""Tests for the optimizers beyond AdamW and SGD (Muon, Lion, Adam-atan2, Schedule-Free AdamW) and their μP tables:
one step against the update computed by hand, the groups against each table, the spectral condition Muon's table
is derived from, a bit-identical resume across a state-dict round trip, settings of another optimizer refused in
one line naming the key, and a short training run through the trainer."""

import io
import math

import pytest
import torch
from mup import set_base_shapes
from torch import nn

from proxies import ZOO, build_model
from proxies.optimizers import OPTIMIZERS
from trainer.config import ConfigError, RunConfig
from trainer.curves import read_curves
from trainer.loop import train
from trainer.optim import build_optimizer

LR, WD = 0.1, 0.5


def tiny_linear() -> nn.Linear:
    """A 2 → 4 Linear whose weight is a hidden matrix (both dims infinite) at its base width (m = 1)."""
    def make(k: int) -> nn.Linear:
        return nn.Linear(2 * k, 4 * k)
    torch.manual_seed(0)
    model = make(1)
    set_base_shapes(model, make(1), delta=make(2))
    return model


def one_step(name: str, grads: list[torch.Tensor], steps: int = 1, wd: float = WD,
             **kwargs) -> tuple[torch.optim.Optimizer, list, list]:
    """(optimizer, params before, params after) for `steps` steps of `name` with the given gradients each step."""
    model = tiny_linear()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = build_optimizer(model, name=name, lr=LR, weight_decay=wd, **kwargs)
    for _ in range(steps):
        for p, g in zip(model.parameters(), grads, strict=True):
            p.grad = g.clone()
        optimizer.step()
    return optimizer, before, [p.detach().clone() for p in model.parameters()]


GRADS = [torch.tensor([[0.5, -2.0], [1e-3, 3.0], [-0.25, 0.0], [4.0, -1.0]]), torch.tensor([0.3, -0.2, 0.0, 7.0])]


@pytest.mark.parametrize("name", ["adamw", "sgd", "lion", "adam_atan2"])
def test_one_step_is_the_hand_computed_update(name):
    # each optimizer's first step from zero state; the weight decays by lr·wd, the bias does not decay
    _, (w0, b0), (w1, b1) = one_step(name, GRADS)
    (gw, gb), eps = GRADS, 1e-8
    if name == "adamw":  # m̂ = g, v̂ = g²: the step is lr · g / (|g| + ε)
        step_w, step_b = LR * gw / (gw.abs() + eps), LR * gb / (gb.abs() + eps)
    elif name == "sgd":  # momentum buffer = g on the first step; torch's SGD decay is L2: g + wd·w
        step_w, step_b = LR * (gw + WD * w0), LR * gb
    elif name == "lion":  # sign(β1·0 + (1 − β1)·g)
        step_w, step_b = LR * gw.sign(), LR * gb.sign()
    else:  # adam_atan2: a · atan2(m̂, b·√v̂) = 1.27 · atan2(g, |g|) = 1.27 · (±π/4), and 0 where g = 0
        step_w, step_b = LR * 1.27 * torch.atan2(gw, gw.abs()), LR * 1.27 * torch.atan2(gb, gb.abs())
    decay = 1.0 if name == "sgd" else 1 - LR * WD
    torch.testing.assert_close(w1, w0 * decay - step_w, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(b1, b0 - step_b, rtol=1e-6, atol=1e-7)


def test_schedule_free_two_steps_follow_the_paper():
    # Defazio et al. 2024, Algorithm 1 (AdamW form), r = 0, weight_lr_power = 2, no warmup, no decay:
    #   z ← z − lr·g/(√(v/(1−β2^t)) + ε);  c_t = lr²/(t·lr²) = 1/t;  x ← (1 − c)·x + c·z;  y = (1 − β1)·z + β1·x
    optimizer, (w0, _), (y2, _) = one_step("schedulefree_adamw", GRADS, steps=2, wd=0.0, betas=(0.9, 0.95))
    g, (b1, b2), eps = GRADS[0], (0.9, 0.95), 1e-8
    z, x, v = w0.clone(), w0.clone(), torch.zeros_like(w0)
    for t in (1, 2):
        v = b2 * v + (1 - b2) * g * g
        z = z - LR * g / ((v / (1 - b2 ** t)).sqrt() + eps)
        x = (1 - 1 / t) * x + (1 / t) * z
    torch.testing.assert_close(y2, (1 - b1) * z + b1 * x, rtol=1e-6, atol=1e-7)  # train mode: p is y
    weight = next(p for g in optimizer.param_groups for p in g["params"] if p.ndim == 2)
    optimizer.eval()  # eval mode: p is the average x, where the loss is to be measured
    torch.testing.assert_close(weight.detach(), x, rtol=1e-6, atol=1e-7)
    optimizer.train()
    torch.testing.assert_close(weight.detach(), y2, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("adjust_lr_fn, shape_factor", [("original", math.sqrt(2)), ("match_rms_adamw", 0.2 * 2)])
def test_muon_step_is_lr_times_shape_factor_times_the_orthogonalised_gradient(adjust_lr_fn, shape_factor):
    # a 4 × 2 gradient with equal singular values: Newton–Schulz keeps its singular vectors and maps its
    # normalised singular value 1/√2 through 5 quintic steps s ← a·s + b·s³ + c·s⁵ (torch runs them in bf16)
    grad_w = torch.tensor([[3.0, 0.0], [0.0, 3.0], [0.0, 0.0], [0.0, 0.0]])
    settings = RunConfig.parse({"steps": 1, "optimizer": {"name": "muon", "muon": {"adjust_lr_fn": adjust_lr_fn}}})
    _, (w0, b0), (w1, b1) = one_step("muon", [grad_w, GRADS[1]], settings=settings.optimizer.settings())
    s = 1 / math.sqrt(2)
    for _ in range(5):
        s = 3.4445 * s - 4.7750 * s ** 3 + 2.0315 * s ** 5
    torch.testing.assert_close(w1, w0 * (1 - LR * WD) - LR * shape_factor * s * grad_w / 3, rtol=2e-2, atol=2e-3)
    torch.testing.assert_close(b1, b0 - LR * GRADS[1] / (GRADS[1].abs() + 1e-8))  # the bias is AdamW's


def lr_mults(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, tuple[str, float]]:
    owner = {id(p): (g["owner"], g["lr"] / 0.01) for g in optimizer.param_groups for p in g["params"]}
    return {name: owner[id(p)] for name, p in model.named_parameters()}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_groups_at_twice_the_base_width_match_the_table(name):
    # the classic bug: a new optimizer built from plain param lists, or Muon given the embeddings/readout
    model = build_model("gpt", 2 * ZOO["gpt"].base_width, 1, "mup", vocab_size=32)
    got = lr_mults(model, build_optimizer(model, name=name, lr=0.01))
    for pname, (owner, mult) in got.items():
        hidden = pname.endswith("weight") and (".attn." in pname or ".mlp." in pname)
        one_inf_dim = 1.0 if name != "sgd" else 2.0  # embeddings, biases, norms, readout: SGD's lr · m
        expected = {"muon": (("muon", 1 / math.sqrt(2)) if hidden else ("adamw", 1.0)),
                    "sgd": ("sgd", 1.0 if hidden else one_inf_dim)}.get(name, (name, 0.5 if hidden else 1.0))
        assert (owner, mult) == (expected[0], pytest.approx(expected[1])), pname


@pytest.mark.parametrize("adjust_lr_fn", ["original", "match_rms_adamw"])
def test_muon_table_keeps_the_spectral_norm_of_the_update_across_width(adjust_lr_fn):
    # Yang, Simon & Bernstein 2023: ‖ΔW‖ = Θ(√(fan_out/fan_in)), the same at every width for a square hidden matrix;
    # without the table's 1/√m, match_rms_adamw's 0.2·√max(A, B) grows it √2× per doubling (the SP column)
    settings = RunConfig.parse({"steps": 1, "optimizer": {"name": "muon", "muon": {"adjust_lr_fn": adjust_lr_fn}}})

    def update_norm(width: int, parametrization: str) -> float:
        torch.manual_seed(0)
        model = build_model("gpt", width, 1, parametrization, vocab_size=32)
        w = model.blocks[0].attn.query.weight
        before = w.detach().clone()
        optimizer = build_optimizer(model, name="muon", lr=1.0, settings=settings.optimizer.settings())
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        optimizer.step()
        return torch.linalg.matrix_norm(w.detach() - before, 2).item()

    base = ZOO["gpt"].base_width
    assert update_norm(2 * base, "mup") / update_norm(base, "mup") == pytest.approx(1.0, abs=0.1)
    if adjust_lr_fn == "match_rms_adamw":
        assert update_norm(2 * base, "sp") / update_norm(base, "sp") == pytest.approx(math.sqrt(2), rel=0.1)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_resume_from_a_state_dict_round_trip_is_bit_identical(name):
    # 3 steps, save model + optimizer + scheduler through torch.save, 2 more; a fresh copy loaded from the save
    # must reach the same bits (the classic bug: state not saved, or the composite's groups stale after a load)
    def build() -> tuple[nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
        torch.manual_seed(0)
        model = build_model("gpt", 32, 1, "mup", vocab_size=16)
        optimizer = build_optimizer(model, name=name, lr=0.01, weight_decay=0.1)
        return model, optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 1 / (1 + t))

    def steps(model, optimizer, scheduler, first: int, last: int) -> None:
        for step in range(first, last):
            tokens = torch.randint(0, 16, (2, 8), generator=torch.Generator().manual_seed(step))
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens.roll(-1, 1).flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()

    model, optimizer, scheduler = build()
    steps(model, optimizer, scheduler, 0, 3)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()},
               buffer)
    steps(model, optimizer, scheduler, 3, 5)
    resumed, resumed_optimizer, resumed_scheduler = build()
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    resumed.load_state_dict(state["model"])
    resumed_optimizer.load_state_dict(state["optimizer"])
    resumed_scheduler.load_state_dict(state["scheduler"])
    steps(resumed, resumed_optimizer, resumed_scheduler, 3, 5)
    for (pname, a), b in zip(model.named_parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b), pname


@pytest.mark.parametrize("optimizer, message", [  # the schedule is the default, cosine
    ({"name": "adamw", "lion": {"beta1": 0.95}},
     "optimizer.lion: settings of lion, but optimizer.name is adamw (give this section only with name lion)"),
    ({"name": "sgd", "muon": {}}, "optimizer.muon: settings of muon, but optimizer.name is sgd"),
    ({"name": "muon", "schedulefree_adamw": {"r": 1.0}}, "optimizer.schedulefree_adamw: settings of"),
    ({"name": "muon", "momentum": 0.5},
     "optimizer.momentum: muon does not read it (instead: optimizer.muon.momentum)"),
    ({"name": "lion", "beta2": 0.98}, "optimizer.beta2: lion does not read it (instead: optimizer.lion.beta2)"),
    ({"name": "lion", "eps": 1e-6}, "optimizer.eps: lion does not read it"),
    ({"name": "adam_atan2", "eps": 1e-6}, "optimizer.eps: adam_atan2 does not read it"),
    ({"name": "muon", "muon": {"adjust_lr_fn": "spectral"}}, "optimizer.muon.adjust_lr_fn: Input should be"),
    ({"name": "muon", "muon": {"ns_steps": 100}}, "optimizer.muon.ns_steps: Input should be less than 100"),
    ({"name": "lion", "lion": {"beta1": 1.0}}, "optimizer.lion.beta1: Input should be less than 1"),
    ({"name": "lion", "lion": {"betas": [0.9, 0.99]}},
     "optimizer.lion.betas: unknown key (allowed: beta1, beta2)"),
    ({"name": "schedulefree_adamw"}, "schedule.kind: cosine decays the LR, schedulefree_adamw needs constant"),
    # found by a hostile user: SGD and AdamW took settings they never read (and a new run id for them)
    ({"name": "sgd", "beta2": 0.9}, "optimizer.beta2: sgd does not read it"),
    ({"name": "sgd", "eps": 1e-3}, "optimizer.eps: sgd does not read it"),
    ({"name": "sgd", "beta1": 0.5}, "optimizer.beta1: sgd does not read it (instead: optimizer.momentum)"),
    ({"name": "adamw", "momentum": 0.5}, "optimizer.momentum: adamw does not read it (instead: optimizer.beta1)"),
    # found by a hostile user: a traceback (unhashable name; float32 or float64 overflow in the optimizer's step)
    ({"name": ["muon"]}, "optimizer.name: Input should be"),
    ({"name": {"a": 1}}, "optimizer.name: Input should be"),
    ({"name": "lion", "lr": 1e39}, "optimizer.lr: Input should be less than or equal to 10000"),
    ({"name": "adamw", "roles": {"hidden": {"lr_mult": 1e39}}}, "optimizer.roles.hidden.lr_mult: Input should be"),
    ({"name": "schedulefree_adamw", "schedulefree_adamw": {"r": 1100}},
     "optimizer.schedulefree_adamw.r: Input should be less than or equal to 10"),
])
def test_settings_of_another_optimizer_are_refused_in_one_line_naming_the_key(optimizer, message):
    with pytest.raises(ConfigError) as err:
        RunConfig.parse({"steps": 1, "optimizer": optimizer})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_run_resumes_only_into_the_optimizer_that_wrote_its_state(tmp_path):
    """Found by a hostile user: Lion resumed AdamW's moments and groups without a word."""
    data = {"model": {"name": "mlp", "width": 16, "depth": 1},
            "data": {"kind": "synthetic-vectors", "options": {"in_features": 8, "classes": 4}},
            "batch_size": 8, "steps": 4, "log_every": 1, "checkpoint": {"every": 2},
            "eval": {"every": 4, "batches": 1, "noise_scale_batches": 0}, "schedule": {"kind": "constant"},
            "output": {"root": str(tmp_path), "study": "t", "run": "r"}}
    assert train(RunConfig.parse(data)).status == "completed"
    switched = RunConfig.parse({**data, "steps": 6, "optimizer": {"name": "lion", "lr": 1e-3}})
    with pytest.raises(ConfigError, match="^optimizer.name: the run r was started with adamw; resume it with adamw"):
        train(switched, resume=True)
    assert "adamw" in (tmp_path / "t" / "runs" / "r" / "config.yaml").read_text()  # not overwritten


@pytest.mark.parametrize("name", ["muon", "lion", "schedulefree_adamw"])
def test_an_optimizers_section_is_filled_with_its_defaults_and_round_trips(name):
    changed = {"muon": {"momentum": 0.9, "nesterov": False, "ns_steps": 3, "adjust_lr_fn": "original"},
               "lion": {"beta1": 0.95, "beta2": 0.98}, "schedulefree_adamw": {"warmup_steps": 7, "r": 1.0,
                                                                              "weight_lr_power": 0.0}}[name]
    data = {"steps": 1, "optimizer": {"name": name}, "schedule": {"kind": "constant"}}
    filled = RunConfig.parse(data)
    assert filled.optimizer.settings() == type(filled.optimizer.settings())()  # every setting written down
    cfg = RunConfig.parse({**data, "optimizer": {"name": name, name: changed}})
    assert RunConfig.from_yaml(cfg.to_yaml()) == cfg and cfg.optimizer.settings().model_dump() == changed
    assert cfg.run_id() != filled.run_id()


def test_adamw_and_sgd_configs_dump_as_before():
    # configs and run ids written before the optimizer sections existed stay byte-identical
    for name in ("adamw", "sgd"):
        text = RunConfig.parse({"steps": 1, "optimizer": {"name": name}}).to_yaml()
        assert "muon" not in text and "lion" not in text and "schedulefree" not in text


def test_each_optimizer_trains_the_gpt_proxy_to_a_lower_loss(tmp_path):
    for name in OPTIMIZERS:
        cfg = RunConfig.parse({
            "model": {"name": "gpt", "width": 32, "depth": 1},
            "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
            "batch_size": 8, "steps": 12, "log_every": 1, "eval": {"every": 12, "batches": 1, "noise_scale_batches": 0},
            "optimizer": {"name": name}, "schedule": {"kind": "constant"},
            "output": {"root": str(tmp_path), "study": "t", "run": name}})
        assert train(cfg).status == "completed", name
        losses = read_curves(cfg.curves_root(), run=name).sort_values("step")["train_loss"]
        assert losses.notna().all() and all(map(math.isfinite, losses)), name
        assert losses.tail(3).mean() < losses.iloc[0] - 0.3, (name, losses.tolist())


def test_the_optimizers_own_section_reaches_the_optimizer_the_trainer_builds(tmp_path):
    """The classic wiring bug: a section validated in the RunConfig but never passed to the optimizer."""
    from trainer.build import build
    from trainer.runtime import Runtime

    cfg = RunConfig.parse({
        "model": {"name": "gpt", "width": 32, "depth": 1},
        "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
        "batch_size": 4, "steps": 1, "schedule": {"kind": "constant"},
        "optimizer": {"name": "muon", "muon": {"adjust_lr_fn": "original", "ns_steps": 3, "momentum": 0.8}},
        "output": {"root": str(tmp_path), "study": "t", "run": "muon"}})
    built = build(cfg, Runtime(device=torch.device("cpu"), dtype=None, rank=0, world=1))
    muon_groups = built.optimizer.parts["muon"].param_groups
    assert {(g["adjust_lr_fn"], g["ns_steps"], g["momentum"]) for g in muon_groups} == {("original", 3, 0.8)}


def test_schedule_free_evaluates_and_checkpoints_its_average_and_trains_at_y(tmp_path):
    """Schedule-Free's answer is the average x; gradients are taken at y. The classic bugs: the val loss measured
    at y (no eval() around evaluation), a checkpoint of y (no eval() around the save: resume would rebuild a
    wrong y), a step in eval mode (no train() after either: schedulefree refuses the step)."""
    from trainer.build import build
    from trainer.checkpoint import list_checkpoints, load_checkpoint
    from trainer.evaluate import evaluate
    from trainer.loop import EVAL_SEED_OFFSET
    from trainer.optim import train_mode
    from trainer.runtime import Runtime

    cfg = RunConfig.parse({
        "model": {"name": "gpt", "width": 32, "depth": 1},
        "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
        "batch_size": 4, "steps": 6, "log_every": 1, "eval": {"every": 2, "batches": 2, "noise_scale_batches": 0},
        "checkpoint": {"every": 2}, "optimizer": {"name": "schedulefree_adamw", "lr": 0.02},
        "schedule": {"kind": "constant"}, "output": {"root": str(tmp_path), "study": "t", "run": "sf"}})
    assert train(cfg).status == "completed"  # steps after evaluations and checkpoints ran in train mode
    val_loss = read_curves(cfg.curves_root(), run="sf").set_index("step").loc[6, "val_loss"]
    state = load_checkpoint(list_checkpoints(cfg.run_dir() / "checkpoints")[-1])
    assert {g["train_mode"] for g in state["optimizer"]["param_groups"]} == {False}  # saved in eval mode

    runtime = Runtime(device=torch.device("cpu"), dtype=None, rank=0, world=1)
    built = build(cfg, runtime)
    built.model.load_state_dict(state["model"])
    built.optimizer.load_state_dict(state["optimizer"])

    def loss_now() -> float:
        return evaluate(built.model, built.data, runtime, batches=2, batch_size=4, chunks=1,
                        seed=cfg.seed + EVAL_SEED_OFFSET)

    at_x = loss_now()  # the checkpoint's weights: x
    train_mode(built.optimizer)
    at_y = loss_now()
    # x after the evaluation's eval()/train() round trip differs from x before it in the last bits only
    assert val_loss == pytest.approx(at_x, abs=1e-5) and abs(at_x - at_y) > 1e-3, (val_loss, at_x, at_y)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_inspect_shows_the_optimizers_table_row_by_row(run_cli, name):
    # owner, LR multiplier, init and forward multiplier of every parameter as `optimizer_rules` has them
    from proxies.optimizers import optimizer_rules

    code, out, _ = run_cli("inspect", "gpt", "--width", "128", "--depth", "1", "--optimizer", name)
    assert code == 0
    rows = {cells[0]: cells for line in out.splitlines()
            if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) == 9}
    for rule in optimizer_rules(build_model("gpt", 128, 1, "mup"), name):
        _, _, _, role, owner, init, lr, _, forward = rows[rule.name]
        assert (role, owner) == (rule.role, rule.owner), rule.name
        assert (float(lr), float(forward)) == pytest.approx((rule.lr_mult, rule.forward_mult), rel=1e-3), rule.name
        assert float(init) == pytest.approx(rule.init_std, rel=0.05, abs=1e-6), rule.name  # measured on another draw
    owners = {rows[n][4] for n in rows if n.startswith("blocks.0.attn.")}
    assert owners == ({"muon", "adamw"} if name == "muon" else {name})  # Muon: matrices, AdamW: their biases


def test_coord_check_readiness_reads_each_optimizers_table():
    """The classic bug: every optimizer but AdamW checked against the SGD column (or Muon's owners not checked)."""
    from sweep.coords.ready import refuse_unless_mup_ready
    from sweep.errors import InputError
    from trainer.optim import optimizer_of, param_groups

    model = build_model("gpt", 2 * ZOO["gpt"].base_width, 1, "mup", vocab_size=32)
    for name in OPTIMIZERS:
        refuse_unless_mup_ready(model, build_optimizer(model, name=name, lr=0.01), name)
    with pytest.raises(InputError, match=r"^optimizer: blocks\.0\.attn\.query\.weight \(hidden\) has lr 0\.01; μP "
                                         r"needs 0\.005 \(base lr × 0\.5, the lion table"):
        flat = [{**g, "lr": 0.01} for g in param_groups(model, 0.01, 0.0, optimizer="lion")]
        refuse_unless_mup_ready(model, optimizer_of("lion", flat, lr=0.01), "lion")
    first, *rest = param_groups(model, 0.01, 0.0, optimizer="muon")  # Muon's groups come first
    moved = {**first, "params": first["params"][:1], "names": first["names"][:1], "owner": "adamw"}
    groups = [{**first, "params": first["params"][1:], "names": first["names"][1:]}, moved, *rest]
    with pytest.raises(InputError, match=rf"^optimizer: {first['names'][0]} \(hidden\) is updated by AdamW; μP with "
                                         r"Muon gives it to Muon"):
        refuse_unless_mup_ready(model, optimizer_of("muon", groups, lr=0.01), "muon")


def test_verify_and_transfer_of_a_study_that_searched_the_optimizer_use_the_best_trials_optimizer(tmp_path, run_cli,
                                                                                                   monkeypatch):
    """The classic bugs: verify or transfer falling back to the default optimizer (AdamW) because the best trial's
    choice and its branch were not carried, or reading a branch's Optuna name (`optimizer.lr[lion]`) as a path. Each
    command runs in this process (the sweeps' workers spawn from it)."""
    import optuna
    import yaml

    from tests.sweep_helpers import load, write_spec

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    spec = write_spec(tmp_path, trials=2, sampler={"name": "grid", "seed": 0, "options": {"points": 1}},
                      run={"schedule": {"kind": "constant"}},
                      search={"optimizer.name": {"choices": ["adamw", "lion"], "when": {
                          "adamw": {"optimizer.lr": {"low": 1e-6, "high": 1e-5, "log": True}},  # lion wins
                          "lion": {"optimizer.lr": {"low": 1e-3, "high": 1e-2, "log": True},
                                   "optimizer.lion.beta2": 0.97}}}})
    code, said, err = run_cli("proxy", spec, "--width", "16")
    assert code == 0, said + err
    best = load(tmp_path).best_trial
    assert best.params["optimizer.name"] == "lion"
    code, said, err = run_cli("verify", spec, "--trials-from", "best", "--widths", "16,32", "--parametrizations",
                              "mup", "--values", "1e-3,3e-3,1e-2", "--seeds", "1", "--refine", "0")
    assert code in (0, 1) and f"settings from tiny-w16-mup#{best.number}" in said, said + err
    configs = [yaml.safe_load(p.read_text()) for p in (tmp_path / "tiny-verify-lr" / "runs").glob("*/config.yaml")]
    assert len(configs) == 2 * 3
    assert {c["optimizer"]["name"] for c in configs} == {"lion"}
    assert {c["optimizer"]["lr"] for c in configs} == {1e-3, 3e-3, 1e-2}
    assert {c["optimizer"]["lion"]["beta2"] for c in configs} == {0.97}
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in load(tmp_path).trials)
    code, _, err = run_cli("transfer", spec, "--width", "64")  # and the full run is Lion's, width-scaled
    assert code == 0, err
    [full] = (tmp_path / "tiny" / "transfer").glob("w64-*.yaml")
    optimizer = yaml.safe_load(full.read_text())["optimizer"]
    assert (optimizer["name"], optimizer["lion"]["beta2"]) == ("lion", 0.97)
