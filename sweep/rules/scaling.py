"""The predicted final loss of the full run, from the loss at the optimum of the verify ladder's proxies.

Form (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", eq. 2, Approach 3):

    L(N, D) = E + A·N^−α + B·D^−β

N the model's parameters (all of them), D the training tokens, each point a verify axis value's loss at its
fitted optimum (across width: N moves; across tokens or steps: D moves). The full form has five unknowns;
with fewer than `FULL_FORM_POINTS` points it is not identifiable, so the reduced form fixes the exponents at
Hoffmann et al.'s fit (α = 0.34, β = 0.28) and fits E, A, B ≥ 0 by non-negative least squares (scipy's nnls).
With enough points all five are fitted (scipy's least_squares, A and B in log space, exponents in [0, 2]).

Both are additive in N and D: the loss a doubling of width buys is the same at every token count. A ladder drawn
as a cross (widths at one token count, token counts at one width) cannot see otherwise, but a target wider and
longer than the proxy sits off the cross, at its corner; on a 2-layer GPT (widths 32–128, 150–600 steps) the gain
per doubling of width was 0.079 nats at 307k tokens and 0.099 at 614k, and the additive form missed the corner's
loss by 6.7 %. Once the ladder measures that term (`sweep verify --across steps=… --ladder-width W`: two widths
each at two token counts, and at least 6 points, so that 2 are left over for the residuals), the form is

    L(N, D) = c − a·ln(N/N₀) − b·ln(D/D₀) − g·ln(N/N₀)·ln(D/D₀)

the expansion of L to second order in ln N and ln D without its squared terms, about the points' geometric mean
(N₀, D₀), so that a and b are the loss per e-fold of N and of D there; fitted by least squares. It is
an empirical local form, not a published law (Kaplan et al. 2020's L(N, D), whose terms interact, missed the same
corner by 6 % with the sixth point), and it has no floor: it is used only for a target no farther (in log) past
the points than they span, and no farther past the widths measured at two token counts or more (and the token
counts measured at two widths or more), where alone the term g is measured, than twice their span (about one
doubling of width past them; a term seen over widths 32–64 and carried to 256 was 12–17 % off on the demo);
farther out, the additive form with its floor E is. Where both are fitted, the one with the smaller residual
standard error (the fit per unknown spent) is the law.

Its point, where the full additive form (all five fitted) and the local one are both fitted and the local one fits
no worse than twice the additive's residual standard error, is the midpoint of the two forms' predictions
(`bracketed`): the additive form has no width × tokens term, so at a corner wider and longer than the points it
prices the gain of width at the shorter token counts it was measured at, too little; the local form has no floor,
so it carries the gain per doubling of width on undiminished, too much. They err on opposite sides. Measured on 13
ladders (a 2-layer GPT, widths 16–64 × 40–1600 steps, two corpora, batch 16 and 64, 2–6 seeds; the target one
doubling wider at the longest steps), the additive form missed by −0.5 % to +5.0 %, the local one by −8.6 % to
+2.1 %, the truth lay between them on 11 of 13, and the midpoint missed by −2.0 % to +3.0 % (median |error| 1.3 %,
against 2.9 % for the better-fitting form, which was the local one on 12 of 13). The rule was chosen on those
ladders; on 200 synthetic ladders of the same shape drawn from Kaplan et al. 2020's L(N, D), whose terms interact
and saturate (tests/test_bracketed.py), it errs no more than the better-fitting form. A local form that fits
worse than that is not the smooth surface it assumes: the additive form's point stands.

The interval of a form linear in its unknowns (the reduced form, the local one above) is least squares'
prediction interval, ŷ ± t(0.975, n − k)·s·√(1 + x₀ᵀ(XᵀX)⁻¹x₀) (s² = Σ residual² / (n − k), X the points' columns,
x₀ the target's): it widens with the target's distance from the points (x₀'s leverage) and with few spare
points (Student's t), where a residual bootstrap with two spare points was measured too narrow (a target 1.2 %
below it). The full form's is a residual bootstrap: each resample refits the law to the fitted values plus
residuals drawn with replacement (scaled by √(n/(n−k)) for the k fitted unknowns), and predicts the target plus
one more drawn residual; the 2.5 and 97.5 percentiles bound it. Either prices the noise of the points, not a
wrong form, so where two forms are fitted the interval holds both forms' intervals: the form is
uncertain too. So are the reduced form's exponents, which the ladder does not measure: its interval spans its
t-interval under each published pair, Hoffmann et al.'s (0.34, 0.28), Besiroglu et al. 2024's replication
(0.3478, 0.3658) and Kaplan et al. 2020's (α_N 0.076, α_D 0.095); its point stays Hoffmann's. Measured: two fresh
demos whose five ladder points agreed within 0.02 nats ended 0.063 apart at the target (each transfer's own LR),
and Hoffmann's interval alone (±0.016: rms 0.0014 on two spare points) missed the better run by 0.07.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares, nnls
from scipy.stats import t as student_t

HOFFMANN_ALPHA, HOFFMANN_BETA = 0.34, 0.28
# the reduced form's exponents are assumed, not measured: its interval spans the published pairs (module docstring)
EXPONENTS = ((HOFFMANN_ALPHA, HOFFMANN_BETA),  # Hoffmann et al. 2022, Approach 3
             (0.3478, 0.3658),  # Besiroglu et al. 2024, "Chinchilla Scaling: A replication attempt"
             (0.076, 0.095))  # Kaplan et al. 2020, α_N and α_D
FULL_FORM_POINTS = 8
LEVEL = 0.95
INTERACTION_POINTS = 6
SOURCE = "Hoffmann et al. 2022, L = E + A·N^−α + B·D^−β"
BRACKET_FIT = 2.0  # the local form's residual standard error at most this × the additive's: the midpoint (docstring)
LOCAL = "local expansion, L = c − a·ln(N/N₀) − b·ln(D/D₀) − g·ln(N/N₀)·ln(D/D₀)"


def interacts(n: np.ndarray, d: np.ndarray) -> bool:
    """Whether the points measure the width × tokens term: two widths each at two token counts (the columns 1, ln N,
    ln D, ln N·ln D have full rank) and INTERACTION_POINTS or more."""
    return len(n) >= INTERACTION_POINTS and np.linalg.matrix_rank(local_columns(n, d)) == 4


def interaction_reach(n: np.ndarray, d: np.ndarray, target_n: float, target_d: float) -> bool:
    """Whether the target is within the local form's reach (module docstring): within reach of all the points, and
    within twice the span of the widths measured at two or more token counts and of the token counts measured at
    two or more widths, where its term g is measured. Twice, in parameters: N grows faster than width (toward
    width², as the embedding's share falls), so one doubling of width past a one-doubling span is more than one
    span in ln N (widths 64, 128 → 256: 1.06 spans)."""
    widths = [x for x in np.unique(n) if len(np.unique(d[n == x])) >= 2]
    tokens = [y for y in np.unique(d) if len(np.unique(n[d == y])) >= 2]
    return (bool(widths and tokens) and within_reach(n, target_n) and within_reach(d, target_d)
            and within_reach(np.array(widths), target_n, spans=2) and within_reach(np.array(tokens), target_d, spans=2))


def within_reach(measured: np.ndarray, target: float, spans: float = 1) -> bool:
    """Whether `target` lies no farther past the measured values (in log) than `spans` times their span."""
    low, high = float(np.min(measured)), float(np.max(measured))
    return low * (low / high) ** spans <= target <= high * (high / low) ** spans


def local_columns(n, d, n0: float = 1.0, d0: float = 1.0) -> np.ndarray:
    """The columns 1, ln(N/N₀), ln(D/D₀) and their product."""
    u, v = np.log(np.asarray(n, float) / n0), np.log(np.asarray(d, float) / d0)
    return np.stack(np.broadcast_arrays(np.ones_like(u * v), u, v, u * v), axis=-1)


def fit(n: np.ndarray, d: np.ndarray, loss: np.ndarray, local: bool = True) -> dict:
    """The law fitted to the points (module docstring): of the additive form and, where the points measure the
    width × tokens term and `local` allows it, the local one, the form whose residual standard error
    √(Σ residual² / (points − unknowns)) is the smaller (the fit per unknown spent)."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    return min(candidates(n, d, loss, local), key=lambda law: standard_error(law, n, d, loss))


def candidates(n: np.ndarray, d: np.ndarray, loss: np.ndarray, local: bool) -> list[dict]:
    """The additive form, and the local one where the points measure its term and `local` allows it."""
    return [additive(n, d, loss)] + ([local_law(n, d, loss)] if local and interacts(n, d) else [])


def refit(law: dict, n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> dict:
    """The same form fitted again to other losses (a bootstrap resample)."""
    return local_law(n, d, loss) if law["source"] == LOCAL else additive(n, d, loss)


def standard_error(law: dict, n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> float:
    spare = len(loss) - law["unknowns"]
    return float(np.sqrt(np.sum((loss - value(law, n, d)) ** 2) / spare)) if spare > 0 else np.inf


def local_law(n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> dict:
    """{c, a, b, g, N0, D0}: the local form by least squares, about the points' geometric mean."""
    n0, d0 = np.exp(np.mean(np.log(n))), np.exp(np.mean(np.log(d)))
    (c, minus_a, minus_b, minus_g), *_ = np.linalg.lstsq(local_columns(n, d, n0, d0), loss, rcond=None)
    return {"c": c, "a": -minus_a, "b": -minus_b, "g": -minus_g, "N0": n0, "D0": d0, "unknowns": 4, "source": LOCAL,
            "form": "local: the width × tokens term measured (two widths at two token counts)"}


def additive(n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> dict:
    """{E, A, B, alpha, beta}: Hoffmann et al.'s form, reduced or full by how many points there are."""
    if len(loss) < FULL_FORM_POINTS or len(set(n)) < 3 or len(set(d)) < 3:
        return reduced(n, d, loss, HOFFMANN_ALPHA, HOFFMANN_BETA)

    def residuals(p):
        e, log_a, log_b, alpha, beta = p
        return e + np.exp(log_a) * n ** -alpha + np.exp(log_b) * d ** -beta - loss

    start = [0.5 * loss.min(), 0.0, 0.0, HOFFMANN_ALPHA, HOFFMANN_BETA]
    p = least_squares(residuals, start, bounds=([0, -30, -30, 0, 0], [loss.min(), 30, 30, 2, 2])).x
    return {"E": p[0], "A": float(np.exp(p[1])), "B": float(np.exp(p[2])), "alpha": p[3], "beta": p[4],
            "unknowns": 5, "source": SOURCE, "form": "full: E, A, B, α, β fitted"}


def reduced(n: np.ndarray, d: np.ndarray, loss: np.ndarray, alpha: float, beta: float) -> dict:
    """{E, A, B, alpha, beta}: the additive form with its exponents fixed, E, A, B ≥ 0 by non-negative least squares."""
    (e, a, b), _ = nnls(hoffmann_columns(n, d, alpha, beta), loss)
    return {"E": e, "A": a, "B": b, "alpha": alpha, "beta": beta, "unknowns": 3, "source": SOURCE,
            "form": f"reduced: α = {alpha}, β = {beta} fixed (Hoffmann et al.), E, A, B fitted; its interval spans "
                    "the published exponents (Hoffmann, Besiroglu, Kaplan)"}


def value(law: dict, n, d):
    if law["source"] == LOCAL:
        return local_columns(n, d, law["N0"], law["D0"]) @ np.array([law["c"], -law["a"], -law["b"], -law["g"]])
    return law["E"] + law["A"] * np.asarray(n, float) ** -law["alpha"] + law["B"] * np.asarray(d, float) ** -law["beta"]


def predict(n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float, target_d: float,
            resamples: int = 500, seed: int = 0) -> dict:
    """{loss, low, high, level, form, source, the law's coefficients, points, rms, forms}: the target's predicted
    loss by the law (`fit`), within the interval that holds every fitted form's (`forms`, each with its own)."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    laws = candidates(n, d, loss, interaction_reach(n, d, target_n, target_d))
    law = min(laws, key=lambda other: standard_error(other, n, d, loss))
    forms = [{"form": other["form"], "loss": float(value(other, target_n, target_d)),
              **interval(other, n, d, loss, target_n, target_d, resamples, seed),
              "standard_error": finite_or_none(standard_error(other, n, d, loss))} for other in laws]
    fitted = value(law, n, d)
    point = bracketed(laws, n, d, loss, target_n, target_d)
    return {"loss": float(value(law, target_n, target_d)) if point is None else point,
            **({} if point is None else {"point": "the midpoint of the full additive form's and the local one's"}),
            "low": min(f["low"] for f in forms),
            "high": max(f["high"] for f in forms), "level": LEVEL,
            **{k: (v if isinstance(v, str) else float(v)) for k, v in law.items()},
            "rms": float(np.sqrt(np.mean((loss - fitted) ** 2))), "points": len(loss), "forms": forms,
            "target": {"params": float(target_n), "tokens": float(target_d)}}


def bracketed(laws: list[dict], n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float,
              target_d: float) -> float | None:
    """The midpoint of the full additive form's and the local form's predictions at the target, where both are fitted
    and the local one's residual standard error is at most BRACKET_FIT × the additive's (module docstring); else
    None."""
    if len(laws) < 2 or laws[0]["unknowns"] != 5:
        return None
    additive_law, local = laws
    if standard_error(local, n, d, loss) > BRACKET_FIT * standard_error(additive_law, n, d, loss):
        return None
    return float((value(additive_law, target_n, target_d) + value(local, target_n, target_d)) / 2)


def held_out(n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> dict | None:
    """The law checked on its own ladder: fitted without the largest rung (largest N, then D), its prediction of
    that rung {params, tokens, loss, low, high, measured, error, holds}. None under 5 points (4 left are the fewest
    `predict` prices), or where the rest never measured the rung's N or D (that term would be priced at 0)."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    if len(loss) < 5:
        return None
    held = int(np.lexsort((d, n))[-1])
    keep = np.arange(len(loss)) != held
    if (len(set(n[keep])) < 2 and n[held] not in n[keep]) or (len(set(d[keep])) < 2 and d[held] not in d[keep]):
        return None
    with np.errstate(all="ignore"):
        p = predict(n[keep], d[keep], loss[keep], n[held], d[held])
    if not all(np.isfinite(p[k]) for k in ("loss", "low", "high")):
        return None
    measured = float(loss[held])
    return {"params": float(n[held]), "tokens": float(d[held]), "loss": p["loss"], "low": p["low"],
            "high": p["high"], "measured": measured, "error": p["loss"] / measured - 1,
            "holds": bool(p["low"] <= measured <= p["high"])}


def finite_or_none(x: float) -> float | None:
    return x if np.isfinite(x) else None


def interval(law: dict, n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float, target_d: float,
             resamples: int, seed: int) -> dict:
    """{low, high}: the law's prediction interval at the target (module docstring); the reduced form's spans its
    t-interval under each published pair of exponents."""
    spare = len(loss) - law["unknowns"]
    if law["unknowns"] == 5 or spare < 1:  # nonlinear, or no point to spare: the bootstrap (a point when exact)
        return bootstrap(law, n, d, loss, target_n, target_d, resamples, seed)
    if law["source"] == SOURCE:
        spans = [t_interval(reduced(n, d, loss, a, b), n, d, loss, target_n, target_d) for a, b in EXPONENTS]
        return {"low": min(lo for lo, _ in spans), "high": max(hi for _, hi in spans)}
    low, high = t_interval(law, n, d, loss, target_n, target_d)
    return {"low": low, "high": high}


def t_interval(law: dict, n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float,
               target_d: float) -> tuple[float, float]:
    """Least squares' prediction interval of a linear form at the target (module docstring)."""
    spare = len(loss) - law["unknowns"]
    design = linear_columns(law, n, d)
    at = linear_columns(law, np.array([target_n]), np.array([target_d]))[0]
    s2 = float(np.sum((loss - value(law, n, d)) ** 2)) / spare
    half = student_t.ppf((1 + LEVEL) / 2, spare) * np.sqrt(s2 * (1 + at @ np.linalg.pinv(design.T @ design) @ at))
    centre = float(value(law, target_n, target_d))
    return centre - float(half), centre + float(half)


def linear_columns(law: dict, n: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The columns a linear form is fitted on: the local form's, or the reduced form's."""
    if law["source"] == LOCAL:
        return local_columns(n, d, law["N0"], law["D0"])
    return hoffmann_columns(n, d, law["alpha"], law["beta"])


def hoffmann_columns(n: np.ndarray, d: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The columns 1, N^−α, D^−β."""
    return np.stack([np.ones_like(n), n ** -alpha, d ** -beta], axis=1)


def bootstrap(law: dict, n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float, target_d: float,
              resamples: int, seed: int) -> dict:
    """{low, high}: the residual bootstrap's interval of the law's prediction at the target (module docstring)."""
    fitted = value(law, n, d)
    residuals = (loss - fitted) * np.sqrt(len(loss) / max(1, len(loss) - law["unknowns"]))
    rng, draws = np.random.default_rng(seed), []
    for _ in range(resamples):
        again = refit(law, n, d, fitted + rng.choice(residuals, len(loss)))
        draws.append(float(value(again, target_n, target_d)) + float(rng.choice(residuals)))
    low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"low": float(low), "high": float(high)}
