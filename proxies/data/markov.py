"""Synthetic tokens: a random first-order Markov chain, for tests and coordinate checks."""

import numpy as np

from proxies.data.tokens import TokenData, split_stream
from proxies.resources import check_fits

SUCCESSORS = 4  # each token is followed by one of this many tokens, so the chain is learnable
BYTES_PER_ID = 48  # while the chain is made: a Python list (8 per pointer, 28 per int object) and its int64 copy


def markov_chain(vocab_size: int, n_tokens: int, seed: int) -> np.ndarray:
    """n_tokens ids from a random Markov chain over vocab_size tokens made from seed.

    Each token has SUCCESSORS random next tokens, picked with one random set of probabilities
    shared by all tokens; the best possible loss is thus about the entropy of those probabilities.
    """
    rng = np.random.default_rng(seed)
    successors = rng.integers(0, vocab_size, size=(vocab_size, SUCCESSORS)).tolist()
    picks = rng.choice(SUCCESSORS, size=n_tokens - 1, p=rng.dirichlet(np.ones(SUCCESSORS))).tolist()
    token = int(rng.integers(vocab_size))
    chain = [token]
    for pick in picks:
        token = successors[token][pick]
        chain.append(token)
    return np.array(chain, dtype=np.int64)


def open_markov(vocab_size: int, n_tokens: int, seed: int, seq_len: int, val_fraction: float) -> TokenData:
    """TokenData over a Markov chain of n_tokens ids, split train/val by val_fraction."""
    check_fits((n_tokens + SUCCESSORS * vocab_size) * BYTES_PER_ID,
               f"a synthetic chain of {n_tokens:,} tokens over a vocabulary of {vocab_size:,}", "data")
    train, val = split_stream(markov_chain(vocab_size, n_tokens, seed), val_fraction, seq_len)
    provenance = {"kind": "synthetic-tokens", "seed": seed, "n_tokens": n_tokens, "dtype": "int64"}
    return TokenData("synthetic-tokens", train, val, seq_len, vocab_size, provenance)
