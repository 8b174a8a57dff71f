"""Shared helpers of the tests of topo_contrastive.nn."""

import numpy as np
import scipy.spatial
import torch

from topo_contrastive import ComplexOperators


def tiny_complex() -> ComplexOperators:
    """6 nodes, 9 edges, 2 filled triangles, 2 empty cycles (L_down and L_up non-trivial).

    Edges sorted: (0,1) (0,2) (0,3) (1,2) (1,4) (2,3) (2,5) (3,5) (4,5).
    Filled triangles: (0,1,2) and (2,3,5); empty cycles 0-2-3 and 1-2-5-4.
    """
    edges = [[0, 1], [0, 2], [0, 3], [1, 2], [1, 4], [2, 3], [2, 5], [3, 5], [4, 5]]
    return ComplexOperators.from_simplices(edges, [[0, 1, 2], [2, 3, 5]])


def delaunay_complex(num_points: int, seed: int = 0) -> ComplexOperators:
    """Delaunay triangulation of random points in the unit square, all triangles filled."""
    rng = np.random.default_rng(seed)
    tri = scipy.spatial.Delaunay(rng.random((num_points, 2))).simplices
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    edges = np.unique(np.sort(edges, axis=1), axis=0)
    return ComplexOperators.from_simplices(edges, tri, num_points)


def dense_reference(x, L_down, L_up, weight, bias, K_down, K_up):
    """Naive formula Y = X W0 + sum_k L_d^k X W_dk + sum_k L_u^k X W_uk + b (dense powers)."""
    y = x @ weight[0]
    for k in range(1, K_down + 1):
        y = y + torch.linalg.matrix_power(L_down.to_dense(), k) @ x @ weight[k]
    for k in range(1, K_up + 1):
        y = y + torch.linalg.matrix_power(L_up.to_dense(), k) @ x @ weight[K_down + k]
    if bias is not None:
        y = y + bias
    return y


def count_pairs(monkeypatch) -> list:
    """Spy on the kernel: a list that gets an entry for every call running two layers as
    one node (the first layer's output recomputed in the backward pass)."""
    import topo_contrastive.nn._scnn_kernel as kernel

    calls, layers = [], kernel.scnn_layers

    def spy(x, params, *args, **kwargs):
        if len(params) == 2:
            calls.append(1)
        return layers(x, params, *args, **kwargs)

    monkeypatch.setattr(kernel, "scnn_layers", spy)
    return calls


def assert_pair_gives_the_same_gradients(enc, run, monkeypatch) -> None:
    """Run ``run()`` (the encoder's output) backward with ``enc.recompute_first_layer`` on
    and off: on, exactly one pair node; off, none; the parameters' gradients equal bit for
    bit."""
    calls = count_pairs(monkeypatch)
    grads = []
    for paired in (True, False):
        enc.recompute_first_layer = paired  # off: the class default
        calls.clear()
        enc.zero_grad()
        run().square().sum().backward()
        grads.append([p.grad.clone() for p in enc.parameters()])
        assert len(calls) == (1 if paired else 0)
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)
