r"""Edge-flow masks with Hodge-aware drop probabilities (paper §4.1, docs/design.md §2.1-2.3):
the transform, its options and the optimisation of the probabilities."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from torch_geometric.data import InMemoryDataset
from torch_geometric.transforms import BaseTransform

from topo_contrastive._utils.checks import check_bool, check_int, check_real
from topo_contrastive.complex import ComplexOperators
from topo_contrastive.hodge import COMPONENTS, HodgeDecomposition
from topo_contrastive.transforms._common import (
    as_hodge,
    as_input,
    bind_hodge,
    check_attr,
    check_rows,
    draw_generator,
    drop_rows,
    fit_inputs,
    fit_plan,
    fit_store,
    get_flow,
    make_generator,
    rank_of,
    signals,
    store,
)
from topo_contrastive.transforms._drop_probabilities import optimize

#: Keyword options of :func:`optimize_drop_probabilities` that the mask passes on.
OPTIMIZER_OPTIONS = ("num_steps", "lr", "tol", "max_block_elements")


# ---------------------------------------------------------------------------- options
def check_budget(budget: Any, name: str = "budget") -> float:
    """``budget`` as a float in ``[0, 1]``, or a clear error."""
    budget = check_real(budget, name)  # a real number, not NaN or inf
    if not 0.0 <= budget <= 1.0:
        raise ValueError(f"`{name}` must lie in [0, 1], got {budget}")
    return budget


def _check_objective(
    perturb: Any, preserve: Any, alpha: Any
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, float]]:
    """The objective's components and weights, checked; ``alpha`` defaults to 1 for each."""
    out = []
    for name, comps in (("perturb", perturb), ("preserve", preserve)):
        comps = (comps,) if isinstance(comps, str) else comps
        if not isinstance(comps, Sequence):
            raise TypeError(
                f"`{name}` must be a sequence of component names {COMPONENTS}, "
                f"got {type(comps).__name__}"
            )
        if any(c not in COMPONENTS for c in comps):
            raise ValueError(f"`{name}` must hold names from {COMPONENTS}, got {tuple(comps)}")
        if len(set(comps)) != len(comps):
            raise ValueError(f"`{name}` repeats a component: {tuple(comps)}")
        out.append(tuple(comps))
    both = set(out[0]) & set(out[1])
    if both:
        raise ValueError(
            f"a component cannot be both perturbed and preserved, got {sorted(both)} in "
            "`perturb` and `preserve`"
        )
    if alpha is not None and not isinstance(alpha, Mapping):
        raise TypeError(
            f"`alpha` must be a mapping from component name to weight, got {type(alpha).__name__}"
        )
    if any(key not in COMPONENTS for key in alpha or {}):
        raise ValueError(f"`alpha` keys must be names from {COMPONENTS}, got {list(alpha)}")
    weights = {k: check_real(v, f"alpha[{k!r}]", 0.0) for k, v in (alpha or {}).items()}
    return out[0], out[1], {**dict.fromkeys(COMPONENTS, 1.0), **weights}


def check_flows(x: Any, num_edges: int, name: str = "x", rank: int = 1) -> Tensor:
    """``x`` checked as finite floating signals ``[N_k]`` or ``[S, N_k]``, ``N_k = num_edges``."""
    if not isinstance(x, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(x).__name__}")
    what = "edge flows" if rank == 1 else f"rank-{rank} signals"
    if not x.is_floating_point():
        raise TypeError(f"`{name}` must be a floating tensor ({what}), got dtype {x.dtype}")
    if x.dim() not in (1, 2) or x.shape[-1] != num_edges:
        simplices = ("nodes", "edges", "triangles", "tetrahedra")[rank]
        raise ValueError(
            f"`{name}` must have shape [N{rank}] or [S, N{rank}] with N{rank} = {num_edges} "
            f"(the complex's number of {simplices}), got {tuple(x.shape)}"
        )
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` contains NaN or inf values")
    return x


def _check_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The optimiser's keyword options (names of :data:`OPTIMIZER_OPTIONS`), checked."""
    unknown = sorted(set(options) - set(OPTIMIZER_OPTIONS))
    if unknown:
        raise TypeError(
            f"unknown optimiser option(s) {unknown}; expected some of {list(OPTIMIZER_OPTIONS)}"
        )
    out = dict(options)
    for key in ("num_steps", "max_block_elements"):
        if key in out:
            out[key] = check_int(out[key], key, 1)
    for key in ("lr", "tol"):
        if key in out and not (key == "lr" and out[key] is None):
            out[key] = check_real(out[key], key, 0.0, open_low=True)
    return out


# ---------------------------------------------------------------------------- optimiser
def optimize_drop_probabilities(
    x: Tensor,
    hodge: HodgeDecomposition,
    budget: float,
    perturb: Sequence[str] = ("gradient",),
    preserve: Sequence[str] = ("curl", "harmonic"),
    alpha: Mapping[str, float] | None = None,
    num_steps: int = 500,
    lr: float | None = None,
    tol: float = 1e-6,
    max_block_elements: int = 2**24,
    return_history: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Per-sample Hodge-aware drop probabilities by projected gradient descent (paper §4.1,
    eq. 9; docs/design.md §2.2-2.3, §7.7).

    A mask drops edge :math:`i` with probability :math:`p_i` (:math:`\mathbf{x}' =
    \mathbf{x} \circ (\mathbf{1} - \mathbf{d})`, :math:`d_i \sim \mathrm{Ber}(p_i)`); with
    :math:`\mathbf{P}_k = \mathbf{U}_k\mathbf{U}_k^\top` the projector onto Hodge subspace
    :math:`k`, the expected distortion of the embedding :math:`\mathbf{U}_k^\top\mathbf{x}`
    has a closed form, and for each flow with support :math:`S` the probabilities solve

    .. math::
        \mathcal{L}_k(\mathbf{p}) = \mathbb{E}\,\|\mathbf{U}_k^\top(\mathbf{x} -
        \mathbf{x}')\|_2^2 = (\mathbf{x} \circ \mathbf{p})^\top \mathbf{P}_k (\mathbf{x}
        \circ \mathbf{p}) + \sum_i (\mathbf{P}_k)_{ii}\, x_i^2\, p_i (1 - p_i),

        \min_{\mathbf{p}} \sum_k s_k\, \alpha_k\,
        \frac{\mathcal{L}_k(\mathbf{p})}{\|\mathbf{P}_k \mathbf{x}\|_2^2}
        \quad \text{s.t.} \quad \mathbf{p} \in [0, 1]^{N_1},\ p_i = 0 \ (i \notin S),\
        \sum_i p_i \le \varepsilon\, |S|

    (:math:`s_k = -1` for ``perturb``, :math:`+1` for ``preserve``; a component with
    :math:`\mathbf{P}_k\mathbf{x} = 0` counts nothing), with the blocks
    :math:`\mathbf{P}_k[S, S]` only (:meth:`HodgeDecomposition.projector_blocks`): it scales
    to large complexes with sparse flows; a support of more than 4,096 edges takes no block
    (:math:`\mathbf{P}_k \mathbf{q}` by decompositions, the projectors' diagonals;
    docs/design.md §7.7), so dense flows scale too. From :math:`p_i = \varepsilon` on
    :math:`S`, with the exact capped-simplex projection and (``lr=None``) a per-sample step
    that never increases the objective, until ``num_steps`` or a stationary point (a local
    minimum: the problem is not convex); batched over samples, float64, a converged sample frozen.

    Args:
        x (Tensor): edge flows (signals of rank ``hodge.rank``), floating.
        hodge (HodgeDecomposition): the decomposition of the flows' complex.
        budget (float): :math:`\varepsilon \in [0, 1]`.
        perturb (Sequence[str], optional): components to perturb.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to preserve.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weights by component name
            (missing ones are 1). (default: ``None``)
        num_steps (int, optional): maximum number of steps. (default: ``500``)
        lr (float, optional): a fixed step instead of the adaptive one (no monotonicity
            guarantee above :math:`1/L`). (default: ``None``)
        tol (float, optional): stop once no :math:`1/L` step moves an entry by more.
            (default: ``1e-6``)
        max_block_elements (int, optional): memory cap, in entries, of a chunk's padded
            blocks ``[B, n, n]`` (of its 16 arrays ``[B, N1]`` for supports of more than
            4,096 edges). (default: ``2**24``, 128 MiB in float64)
        return_history (bool, optional): also return the objective after every step.
            (default: ``False``)

    Returns:
        The drop probabilities, zero off each flow's support; with ``return_history=True``
        a pair ``(p, history)``, ``history`` float64 ``[T + 1, S]``, the objective of every
        sample at the start and after each step (repeated once a chunk stopped).

    Shapes:
        - **x**, **output**: ``[N1]`` or ``[S, N1]``, the output on ``x``'s device and dtype.

    Raises:
        TypeError: ``x`` not a floating tensor, ``hodge`` not a
            :class:`~topo_contrastive.hodge.HodgeDecomposition`, wrong argument types.
        ValueError: ``x`` of the wrong length or with NaN/inf, ``budget`` outside
            ``[0, 1]``, unknown/repeated/conflicting component names, negative weights,
            non-positive ``lr``/``tol``, ``num_steps < 1``.

    Example:
        >>> ops = ComplexOperators.from_simplices(
        ...     [[0, 1], [1, 2], [0, 2], [2, 3], [0, 3]], [[0, 1, 2]])
        >>> hodge = HodgeDecomposition(ops)
        >>> x = torch.stack([ops.path_to_flow([0, 1, 2, 3]), ops.path_to_flow([3, 0, 2])])
        >>> p = optimize_drop_probabilities(x, hodge, budget=0.3)  # [2, N1]
        >>> p.shape, bool((p[x == 0] == 0).all())  # nothing dropped off the support
        (torch.Size([2, 5]), True)
        >>> bool((p.sum(1) <= 0.3 * (x != 0).sum(1) + 1e-6).all())  # the budget holds
        True
    """
    if not isinstance(hodge, HodgeDecomposition):
        raise TypeError(f"`hodge` must be a HodgeDecomposition, got {type(hodge).__name__}")
    x = check_flows(x, hodge.num_simplices, rank=hodge.rank)
    options = _check_options(
        {"num_steps": num_steps, "lr": lr, "tol": tol, "max_block_elements": max_block_elements}
    )
    p, history = optimize(
        x.unsqueeze(0) if x.dim() == 1 else x,
        hodge,
        check_budget(budget),
        _check_objective(perturb, preserve, alpha),
        **options,
        history=check_bool(return_history, "return_history"),
    )
    p = p.reshape(x.shape)
    return (p, history) if return_history else p


# ---------------------------------------------------------------------------- transform
class HodgeSpectralMask(BaseTransform):
    r"""Mask edge flows with per-edge drop probabilities optimised with respect to the
    Hodge decomposition (paper §4.1 "Hodge-aware spectral augmentations", eq. 9).

    .. math::
        \mathbf{x}' = \mathbf{x} \circ (\mathbf{1} - \mathbf{d}), \qquad
        d_i \sim \mathrm{Ber}(p_i), \qquad
        \mathbf{p} = \operatorname*{arg\,min}_{\mathbf{p} \in \mathcal{G}_\mathbf{p}}
        \sum_k s_k \alpha_k \frac{\mathbb{E}\|\mathbf{U}_k^\top(\mathbf{x} -
        \mathbf{x}')\|_2^2}{\|\mathbf{U}_k^\top \mathbf{x}\|_2^2}

    with :math:`s_k = -1` for the components to ``perturb``, :math:`+1` for those to
    ``preserve``, :math:`\mathcal{G}_\mathbf{p}` the probabilities in :math:`[0, 1]`, zero
    off the flow's support, summing to at most :math:`\varepsilon\,|\operatorname{supp}
    \mathbf{x}|` (:func:`~topo_contrastive.transforms.optimize_drop_probabilities`).

    The probabilities depend only on the flow: they are read from ``data[prob_attr]`` with
    the tag of the settings they were computed with (a mask of other settings refuses
    them), stored once per sample by :meth:`fit` (one batched optimisation) or by the mask
    with ``fit_only=True`` as a dataset's ``pre_transform`` (the processed file then holds
    them: the reopened dataset needs no second fit, nor a complex), else computed on the
    fly. Each call draws a new mask (``view1, view2 = mask(batch), mask(batch)``); the input
    is not modified. Samples with their own complex
    (:class:`~topo_contrastive.data.ComplexData`) need no ``hodge``; with
    ``HodgeDecomposition(ops, rank=k)`` it masks ``x_k``. Design notes: docs/design.md §7.5.

    Args:
        budget (float): :math:`\varepsilon \in [0, 1]`, the largest expected fraction of a
            flow's support that is dropped.
        hodge (HodgeDecomposition, ComplexOperators or a TopoNetX complex, optional): the
            flows' complex; ``None`` binds ``dataset.complex`` at :meth:`fit`.
            (default: ``None``)
        perturb (Sequence[str], optional): components whose embedding the masks change.
            (default: ``("gradient",)``)
        preserve (Sequence[str], optional): components to keep.
            (default: ``("curl", "harmonic")``)
        alpha (Mapping[str, float], optional): non-negative weight per component (missing
            ones are 1). (default: ``None``)
        attr (str, optional): signal attribute. (default: ``None``: ``"x_k"`` for
            ``k = hodge.rank``)
        prob_attr (str, optional): attribute of the drop probabilities.
            (default: ``"drop_prob"``)
        generator (torch.Generator or int, optional): generator or seed; ``None`` uses
            torch's global generator. (default: ``None``)
        fit_only (bool, optional): store the probabilities (and their tag) on the returned
            copy and draw no mask: the ``pre_transform`` form. (default: ``False``)
        **optimizer_options: ``num_steps``, ``lr``, ``tol``, ``max_block_elements`` of
            :func:`~topo_contrastive.transforms.optimize_drop_probabilities`.

    Shapes:
        - **input** ``data[attr]``: ``[N1]`` or ``[N1, C]`` on a ``Data``, ``[B * N1, C]`` on a
          ``Batch`` or with ``data.batch``; ``data[prob_attr]`` (optional): ``[rows, 1]``.
        - **output** ``data[attr]``: as the input; ``data[prob_attr]``: ``[rows, 1]``, in
          :math:`[0, 1]`, zero off the flow's support.

    Raises:
        TypeError: ``budget`` not a number (a complex passed first: the old argument order),
            ``hodge`` of another type, bad ``generator`` or options; probabilities to compute
            before a complex is known.
        ValueError: ``budget`` outside :math:`[0, 1]`, unknown/repeated/conflicting component
            names, negative weights, bad optimiser options, ``prob_attr == attr``; when
            called, a missing/NaN flow, several channels (to optimise), rows other than
            :math:`N_1` per sample, a ``batch`` vector not in blocks of :math:`N_1`, stored
            probabilities of the wrong shape, outside :math:`[0, 1]` or of other settings.

    Example:
        >>> ds = SyntheticTrajectories("data/trajectories", num_points=150, num_train=4,
        ...                            num_val=2, num_test=2, log=False)
        >>> mask = HodgeSpectralMask(budget=0.3, generator=0)
        >>> ds = mask.fit(ds)  # binds ds.complex; one batched optimisation: ds[i].drop_prob
        >>> batch = next(iter(DataLoader(ds, batch_size=4)))
        >>> view1, view2 = mask(batch), mask(batch)  # two independent masked views
        >>> view1.x_1.shape == batch.x_1.shape, bool((view1.x_1 != view2.x_1).any())
        (True, True)
    """

    def __init__(
        self,
        budget: float,
        hodge: HodgeDecomposition | ComplexOperators | None = None,
        perturb: Sequence[str] = ("gradient",),
        preserve: Sequence[str] = ("curl", "harmonic"),
        alpha: Mapping[str, float] | None = None,
        attr: str | None = None,
        prob_attr: str = "drop_prob",
        generator: torch.Generator | int | None = None,
        fit_only: bool = False,
        **optimizer_options: Any,
    ) -> None:
        if type(budget).__name__ in (
            "HodgeDecomposition", "ComplexOperators", "SimplicialComplex", "CellComplex",
        ):  # fmt: skip
            raise TypeError(
                f"`budget` must be a float in [0, 1], got {type(budget).__name__}: budget comes "
                f"first: {type(self).__name__}(budget, hodge=...)"
            )
        self.budget = check_budget(budget)
        #: The decomposition of the flows' complex (``None`` until bound by :meth:`fit`).
        self.hodge = as_hodge(hodge)
        self.perturb, self.preserve, self.alpha = _check_objective(perturb, preserve, alpha)
        if attr is None:  # x_k for signals of rank k (x_1 until a complex is bound)
            attr = f"x_{1 if self.hodge is None else self.hodge.rank}"
        self.attr = check_attr(attr, "attr")
        self.prob_attr = check_attr(prob_attr, "prob_attr")
        if self.prob_attr == self.attr:
            raise ValueError(f"`prob_attr` must differ from `attr`, both are {attr!r}")
        self.optimizer_options = _check_options(optimizer_options)
        self.generator = make_generator(generator)
        self.fit_only = check_bool(fit_only, "fit_only")

    @property
    def rank(self) -> int:
        """Rank of the signals: the bound decomposition's, else from ``attr`` (``x_k``)."""
        return int(self.hodge.rank) if self.hodge is not None else rank_of(self.attr)

    def bind(self, source: Any) -> HodgeDecomposition:
        """Bind the mask to a complex if it has none, else check that ``source`` is on the
        same complex; returns the decomposition.

        Args:
            source: a dataset with a ``complex`` attribute, a ``ComplexOperators`` or a
                ``HodgeDecomposition``.

        Raises:
            TypeError: no complex given and ``source`` has none.
            ValueError: ``source`` is another complex than the bound one.
        """
        self.hodge = bind_hodge(self.hodge, source, type(self).__name__)
        return self.hodge

    def fit(self, dataset: InMemoryDataset | Iterable[Any]) -> Any:
        """Store the drop probabilities of every sample of ``dataset`` (``data[prob_attr]``),
        in one batched optimisation (samples on their own complexes a chunk of them at a
        time, each on its own complex); binds ``dataset.complex`` first if the mask has no
        complex.

        Args:
            dataset: an ``InMemoryDataset`` (updated in place, not its file, and returned;
                views made by indexing share the new attribute) or an iterable of ``Data``
                (a list of shallow copies is returned).

        Raises:
            TypeError: no complex given and ``dataset`` has none.
            ValueError: a sample without a valid flow of :math:`N_1` rows; a dataset on
                another complex than the bound one.
        """
        dataset, own = fit_plan(dataset, self.attr)
        hodge = self.bind(dataset) if own is None else None
        inputs = fit_inputs(dataset, own, self.attr, self.rank, hodge)
        values = [{self.prob_attr: self._probabilities(data, x)} for data, x in inputs]
        key, tag = self._tag()
        tags = {key: torch.full((1, 1), tag, dtype=torch.int32)}
        return fit_store(dataset, own, self.attr, values, tags)

    # ------------------------------------------------------------------ per call
    def _settings(self) -> str:
        # every setting that changes the probabilities (not the complex: stored ones are
        # checked against the flow's rows)
        alpha = {k: v for k, v in self.alpha.items() if v != 1.0}
        extra = f", alpha={alpha!r}" if alpha else ""
        extra += "".join(f", {k}={v!r}" for k, v in self.optimizer_options.items())
        return (
            f"budget={self.budget}, perturb={self.perturb}, preserve={self.preserve}, "
            f"attr={self.attr!r}, prob_attr={self.prob_attr!r}{extra}"
        )

    def _tag(self) -> tuple[str, int]:
        """The key stored beside the probabilities and the tag of the settings (31 bits of
        their sha256): a mask of other settings refuses the probabilities."""
        tag = int(hashlib.sha256(self._settings().encode()).hexdigest()[:7], 16)
        return f"{self.prob_attr}_settings", tag

    def _probabilities(self, data: Any, x: Tensor) -> Tensor:
        """Drop probabilities ``[rows, 1]`` of the signals ``x`` of ``data`` (``None``: the
        stacked samples of the shared complex), in one batched optimisation."""
        if x.dim() == 2 and x.shape[1] != 1:
            raise ValueError(
                f"drop probabilities need a single-channel flow, got `{self.attr}` of shape "
                f"{tuple(x.shape)}; compute them on the scalar flow and store `{self.prob_attr}`"
            )
        hodge, flows, back = signals(
            data, x, self.attr, self.rank, self.hodge, type(self).__name__, split=True
        )
        objective = (self.perturb, self.preserve, self.alpha)
        p = optimize(flows, hodge, self.budget, objective, **self.optimizer_options)[0]
        return back(p).reshape(-1, 1)

    def _with_tag(self, p: Tensor) -> dict[str, Tensor]:
        """The probabilities ``[rows, 1]`` and their settings' tag (one int32 broadcast)."""
        key, tag = self._tag()
        tags = torch.full((1, 1), tag, dtype=torch.int32, device=p.device)
        return {self.prob_attr: p, key: tags.expand(p.shape[0], 1)}

    def _stored(self, data: Any, x: Tensor) -> Tensor | None:
        """The probabilities ``data`` carries, checked, or ``None``."""
        p = data[self.prob_attr] if self.prob_attr in data.keys() else None  # noqa: SIM118
        if p is None:
            return None
        name = f"data.{self.prob_attr}"
        if not isinstance(p, Tensor) or not p.is_floating_point():
            raise TypeError(f"`{name}` must be a floating tensor of drop probabilities")
        if p.shape not in ((x.shape[0],), (x.shape[0], 1)):
            raise ValueError(
                f"`{name}` must have shape [{x.shape[0]}, 1] (one probability per row of "
                f"`data.{self.attr}`), got {tuple(p.shape)}"
            )
        key, want = self._tag()
        tag = data[key] if key in data.keys() else None  # noqa: SIM118 - Data API
        if isinstance(tag, Tensor):  # fitted (and checked) with the settings of the tag
            if bool((tag != want).any()):
                raise ValueError(
                    f"`{name}` was computed with other settings than this mask's ({self!r}), "
                    "e.g. another budget: fit the dataset with this mask again (mask.fit("
                    "dataset), or ContrastiveViews(mask).fit(dataset)), or use the mask it was "
                    "fitted with"
                )
            return p
        low, high = torch.aminmax(p) if p.numel() else (p.new_zeros(()), p.new_zeros(()))
        if not (bool(low >= 0) and bool(high <= 1)):  # NaN propagates: also rejected
            raise ValueError(f"`{name}` must lie in [0, 1] (and not be NaN)")
        return p

    def forward(self, data: Any) -> Any:
        data = as_input(data)
        x = get_flow(data, self.attr)
        check_rows(data, x, self.attr, self.hodge)
        if self.fit_only:
            for key, value in self._with_tag(self._probabilities(data, x)).items():
                store(data, key, value, like=self.attr)
            return data
        p = self._stored(data, x)
        if p is None:
            p = self._probabilities(data, x)  # [rows, 1], batched over samples
            store(data, self.prob_attr, p, like=self.attr)
        data[self.attr] = drop_rows(x, p, draw_generator(self))  # one draw per row
        return data

    def __repr__(self) -> str:
        fit_only = ", fit_only=True" if self.fit_only else ""
        return f"{type(self).__name__}({self._settings()}{fit_only})"
