"""MST run by private-pgm's `mbi` package (PyPI `mbi` 2.0.0), for `cargo bench --bench mst`.

McKenna, Miklau & Sheldon's MST as their paper describes it, on mbi's estimation API:
every 1-way marginal measured with Gaussian noise, the values whose noisy count is below
3 sigma merged, a spanning tree of attribute pairs chosen by exponential mechanisms scored
by the L1 distance between each pair's counts and the 1-way model's (estimated by mirror
descent, 2500 steps), the tree's 2-way marginals measured, the graphical model estimated by
mirror descent (10000 steps) and synthetic records drawn from it. zCDP's rho comes from
(epsilon, delta) by Canonne, Kamath & Steinke's conversion, as the engine's.

Input: a CSV of integer codes with a header (one column per attribute) and a JSON object
of each attribute's domain size. Output: the synthetic records as the same kind of CSV,
and on stdout one JSON line: {"seconds": the algorithm's time (data loaded), "rows",
"peak_rss_mb"}.
"""

import argparse
import itertools
import json
import math
import resource
import time

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)

import numpy as np  # noqa: E402
from mbi import Dataset, Domain, LinearMeasurement  # noqa: E402
from mbi.estimation import MirrorDescent  # noqa: E402


def delta_for(rho, epsilon):
    """The delta rho-zCDP gives at epsilon (Canonne, Kamath & Steinke 2020)."""
    if rho <= 0:
        return 0.0
    low, high = 1.01, (epsilon + 1) / (2 * rho) + 2
    alpha = (low + high) / 2
    for _ in range(200):
        alpha = (low + high) / 2
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1 / alpha) < 0:
            low = alpha
        else:
            high = alpha
    value = math.exp((alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1 / alpha))
    return min(value / (alpha - 1), 1.0)


def rho_for(epsilon, delta):
    """The largest rho whose delta at epsilon is at most delta."""
    low, high = 0.0, epsilon + 1
    for _ in range(200):
        rho = (low + high) / 2
        if delta_for(rho, epsilon) <= delta * (1 - 1e-9):
            low = rho
        else:
            high = rho
    return low


def measure(data, cliques, stddev, rng):
    """Each clique's counts with Gaussian noise of `stddev` on every cell."""
    out = []
    for clique in cliques:
        counts = data.project(clique).datavector()
        noisy = counts + rng.normal(0.0, stddev, size=counts.size)
        out.append(LinearMeasurement(noisy, clique, stddev))
    return out


def choose(scores, epsilon, rng):
    """The exponential mechanism with sensitivity 1."""
    logits = 0.5 * epsilon * np.asarray(scores)
    logits -= logits.max()
    weights = np.exp(logits)
    return rng.choice(len(scores), p=weights / weights.sum())


def mst(data, epsilon, delta, rng):
    attrs = list(data.domain.attributes)
    d = len(attrs)
    rho = rho_for(epsilon, delta)
    part = rho / 3
    one_way_sd = math.sqrt(d / (2 * part))
    one = measure(data, [(a,) for a in attrs], one_way_sd, rng)

    # Values the 1-way measurements cannot tell from zero are merged into one.
    mapping = {}
    for m in one:
        noisy = np.asarray(m.noisy_measurement)
        kept = noisy >= 3 * one_way_sd
        if not kept.all():
            mapping[m.clique[0]] = np.where(kept, np.cumsum(kept) - 1, kept.sum())
    small = data.compress(mapping)
    one = [m.compress(mapping, data.domain) for m in one]

    # The tree: pairs far from what the 1-way model predicts.
    independent = MirrorDescent().estimate(small.domain, one, iters=2500)
    scores = {}
    for a, b in itertools.combinations(attrs, 2):
        truth = small.project((a, b)).datavector()
        predicted = independent.project((a, b)).datavector()
        scores[a, b] = float(np.abs(truth - predicted).sum())
    edge_epsilon = math.sqrt(8 * part / (d - 1))
    component = {a: a for a in attrs}

    def root(a):
        while component[a] != a:
            a = component[a]
        return a

    edges = []
    for _ in range(d - 1):
        pairs = [p for p in scores if root(p[0]) != root(p[1])]
        a, b = pairs[choose([scores[p] for p in pairs], edge_epsilon, rng)]
        component[root(a)] = root(b)
        edges.append((a, b))

    two_way_sd = math.sqrt((d - 1) / (2 * part))
    two = measure(small, edges, two_way_sd, rng)
    model = MirrorDescent().estimate(small.domain, one + two, iters=10000)
    return model.synthetic_data().decompress(mapping), edges


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--domain", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    with open(args.domain) as f:
        sizes = json.load(f)
    with open(args.data) as f:
        header = f.readline().strip().split(",")
    codes = np.loadtxt(args.data, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    domain = Domain(header, [sizes[c] for c in header])
    data = Dataset({c: codes[:, i] for i, c in enumerate(header)}, domain)

    start = time.perf_counter()
    synth, edges = mst(data, args.epsilon, args.delta, np.random.default_rng(args.seed))
    seconds = time.perf_counter() - start

    columns = np.column_stack([np.asarray(synth.data[c]) for c in header])
    np.savetxt(args.out, columns, fmt="%d", delimiter=",", header=",".join(header), comments="")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "rows": int(columns.shape[0]), "peak_rss_mb": peak, "tree": edges}))


if __name__ == "__main__":
    main()
