"""The linear probe's time on a wide problem: 1,000 training samples x 2,000 features.

Random Gaussian features with a linear label (``y = [X w + noise > 0]``), 250 more samples for
the test split; :func:`~topo_contrastive.evaluation.linear_probe` with its defaults (the C
grid, 10-fold stratified CV, ``n_jobs`` = torch's thread count). The issue's bound: under a
minute on 2 cores.

With more features than samples such data are separable and every fit converges quickly.
``--duplicates K`` makes them not separable, as real flows can be (``|x|`` of a trip and of its
reverse trip are equal, their labels are not): the last ``K`` training samples are copies of
the first ``K`` with the other label. Then the fits with a large ``C`` do not converge in the
dual and run to their iteration limit
(:func:`~topo_contrastive.evaluation.probe.max_iter_for`).

Each run times the probe as it is (wide splits: the primal on the row space,
:func:`~topo_contrastive.evaluation.probe.uses_row_space`) and, as the baseline in the
same run, the dual coordinate descent on all features (the solver before; Table 1's splits
still use it), and prints the ratio.

    python benchmarks/bench_probe.py                 # prints seconds and accuracies
    python benchmarks/bench_probe.py --duplicates 200
    python benchmarks/bench_probe.py --samples 180 --features 1082
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def problem(samples: int, features: int, test: int = 250, seed: int = 0, duplicates: int = 0):
    """``(X, y, train_idx, test_idx)``: Gaussian features, a linear label with 10 % noise;
    the last ``duplicates`` training samples copy the first ones with the other label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(samples + test, features))
    w = rng.normal(size=features)
    score = X @ w
    y = (score + 0.1 * score.std() * rng.normal(size=score.shape) > 0).astype(np.int64)
    if duplicates:
        X[samples - duplicates : samples] = X[:duplicates]
        y[samples - duplicates : samples] = 1 - y[:duplicates]
    return X, y, np.arange(samples), np.arange(samples, samples + test)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--duplicates", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    import torch

    from topo_contrastive.evaluation import probe as evaluation

    X, y, tr, te = problem(args.samples, args.features, duplicates=args.duplicates)
    rule = evaluation.uses_row_space
    solvers = {
        "probe (as it is)": rule,
        "baseline: dual on all features": lambda n, d: False,
    }
    for _ in range(args.repeats):
        secs = {}
        for name, choice in solvers.items():
            evaluation.uses_row_space = choice
            start = time.perf_counter()
            res = evaluation.linear_probe(X, y, tr, te)
            secs[name] = time.perf_counter() - start
            evaluation.uses_row_space = rule
            print(
                f"{args.samples} x {args.features} ({args.duplicates} flipped duplicates), "
                f"{torch.get_num_threads()} threads, {name}: {secs[name]:.1f} s "
                f"(C = {res.C:g}, cv {100 * res.cv_accuracy:.1f} %, "
                f"test {100 * res.test_accuracy:.1f} %)",
                flush=True,
            )
        probe, base = secs.values()
        print(f"  probe / baseline: {probe / base:.2f}x", flush=True)


if __name__ == "__main__":
    main()
