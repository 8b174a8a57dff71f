r"""Any TopoModelX simplicial model as the encoder of the contrastive pipeline:
:class:`TopoModelXEncoder` (the ``topomodelx`` extra)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from topo_contrastive.complex.laplacians import Laplacians
from topo_contrastive.nn._inputs import as_laplacians, check_blocks_batch
from topo_contrastive.utils.checks import check_int

__all__ = ["KINDS", "TopoModelXEncoder"]

#: The TopoModelX models the adapter builds: name -> (module, class).
KINDS = {
    "scnn": ("topomodelx.nn.simplicial.scnn", "SCNN"),
    "sccnn": ("topomodelx.nn.simplicial.sccnn", "SCCNN"),
    "san": ("topomodelx.nn.simplicial.san", "SAN"),
    "scn2": ("topomodelx.nn.simplicial.scn2", "SCN2"),
}
_READOUTS = ("mean", "sum", "max", "energies")


def _replicate(t: Tensor, times: int) -> Tensor:
    """``I_times (x) t``: ``times`` copies of the sparse ``t`` on the diagonal (COO)."""
    if times == 1:
        return t
    c = t.coalesce()
    idx, val = c.indices(), c.values()
    n, m = c.shape
    steps = torch.arange(times, device=idx.device)
    rows = (idx[0][None, :] + steps[:, None] * n).reshape(-1)
    cols = (idx[1][None, :] + steps[:, None] * m).reshape(-1)
    return torch.sparse_coo_tensor(
        torch.stack([rows, cols]), val.repeat(times), (times * n, times * m),
        check_invariants=False,  # in range by construction
    ).coalesce()


def _check_widths(kind: str, kwargs: dict[str, Any]) -> None:
    """The input widths of the model's arguments are integers >= 1 (a width 0 would make
    the model ignore its input)."""
    if kind == "sccnn":
        widths = kwargs.get("in_channels_all")
        if widths is not None:
            if not isinstance(widths, (tuple, list)) or len(widths) != 3:
                raise ValueError(
                    "`in_channels_all` must be three input widths (nodes, edges, 2-cells), "
                    f"got {widths!r}"
                )
            for i, w in enumerate(widths):
                check_int(w, f"in_channels_all[{i}]", minimum=1)
    elif kind == "scn2":
        for k in range(3):
            if f"in_channels_{k}" in kwargs:
                check_int(kwargs[f"in_channels_{k}"], f"in_channels_{k}", minimum=1)
    elif "in_channels" in kwargs:
        check_int(kwargs["in_channels"], "in_channels", minimum=1)


class TopoModelXEncoder(torch.nn.Module):
    r"""A TopoModelX simplicial model (``SCNN``, ``SCCNN``, ``SAN``, ``SCN2``) behind the
    interface of :class:`~topo_contrastive.nn.SCNN`: ``forward(x, laplacians, batch)``
    returns one embedding per sample, ``[B, D]``, so it drops into the pipeline (views,
    projection head, losses) unchanged.

    A batch is one complex (block-diagonal operators, :class:`~topo_contrastive.data.
    ComplexData`; or ``B`` flows on one shared complex, whose operators are repeated on
    the diagonal), so the model runs **once per batch**, never per sample, and its per-edge
    output is pooled per sample with PyG's global pooling over ``batch``. The other
    operators a model needs (:math:`\mathbf{B}_1`, :math:`\mathbf{B}_2`,
    :math:`\mathbf{L}_0`, :math:`\mathbf{L}_2`, ...) come from the complex the
    :class:`~topo_contrastive.complex.Laplacians` carry (:meth:`ComplexOperators.laplacians
    <topo_contrastive.ComplexOperators.laplacians>` or :meth:`ComplexData.laplacians
    <topo_contrastive.data.ComplexData.laplacians>`). Models that take signals on nodes
    and 2-cells get the divergence :math:`\mathbf{B}_1\mathbf{x}` and the curl
    :math:`\mathbf{B}_2^\top\mathbf{x}` of the edge flow there.

    Per model (TopoModelX 0.0.1's signatures):

    - ``"scnn"``: ``model(x, L_down, L_up)``;
    - ``"sccnn"``: ``model((x_0, x, x_2), (L0, L_down, L_up, L2), (B1, B2))`` (``sc_order=2``;
      with ``sc_order > 2`` the 2-cells' ``L2_down``, ``L2_up``);
    - ``"san"``: its layers with the harmonic projection
      :math:`(\mathbf{I} - \epsilon \mathbf{L}_1)^{k}` computed sparse (TopoModelX's own
      ``SAN.forward`` builds it dense, :math:`N_1^2`, which a batch cannot afford);
    - ``"scn2"``: ``model(x_0, x, x_2, L0, L1, L2)`` after linear lifts of the three signals
      to its input widths (the model keeps the widths).

    TopoModelX's layers build dense identities :math:`N \times N` at every call (their
    ``torch.eye``): memory and time grow with the square of the batch's simplices, so keep
    batches of a few thousand edges with this adapter (the library's own
    :class:`~topo_contrastive.nn.SCNN` has no such limit).

    Source: Hajij et al., "TopoX: a suite of Python packages for machine learning on
    topological domains", JMLR 2024 (TopoModelX); Yang et al. 2022 (SCNN, SCCNN), Giusti et
    al. 2022 (SAN), Ebli et al. 2020 (SCN2).

    Args:
        kind (str): ``"scnn"``, ``"sccnn"``, ``"san"`` or ``"scn2"``.
        readout (str): pooling of the per-edge output: ``"mean"`` (default), ``"sum"``,
            ``"max"``, or ``"energies"``: the basis-free
            :class:`~topo_contrastive.nn.HodgeReadout` without pooling (per channel the
            energies :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\downarrow\mathbf{h}`,
            :math:`\tfrac{1}{N_1}\mathbf{h}^\top\mathbf{L}_\uparrow\mathbf{h}` of each
            sample: ``2 D`` features that, for a model odd in its input such as TopoModelX's
            SCNN, do not depend on the edge orientations: for samples on different
            complexes, whose orientations mean nothing).
        **model_kwargs: the arguments of the TopoModelX model (e.g. ``in_channels=1,
            hidden_channels=32, conv_order_down=2, conv_order_up=2`` for ``"scnn"``;
            ``in_channels_all=(1, 1, 1), hidden_channels_all=(32, 32, 32), conv_order=2,
            sc_order=2`` for ``"sccnn"``); recorded, so that the encoder can be rebuilt.

    Shapes:
        - **input:** as :class:`~topo_contrastive.nn.SCNN`: ``x`` ``[N1, C]``,
          ``[B, N1, C]`` or ``[B * N1, C]`` with ``batch`` on one complex,
          ``[sum N1, C]`` with ``batch`` on a batch of complexes; float32 on the CPU
          (TopoModelX builds its identities with the default device and dtype).
        - **output:** ``[B, out_channels]`` (``out_channels`` = the model's width ``D``, or
          ``2 D`` with ``readout="energies"``); :meth:`edge_embeddings`: the per-edge
          output, ``[sum N1, D]`` on a batch of complexes, ``[B, N1, D]`` on one complex.

    Raises:
        ImportError: TopoModelX is not installed (the ``topomodelx`` extra).
        TypeError / ValueError: an unknown ``kind`` or ``readout``; an input width
            (``in_channels``, ``in_channels_all``, ``in_channels_k``) that is not an
            integer >= 1; (``forward``) ``laplacians`` without their complex (a pair of
            tensors), the operators of a batch of several complexes without ``batch``
            (never one pooled embedding), or the errors of the batch layout (see
            :class:`~topo_contrastive.nn.SCNN`).

    Example:
        >>> encoder = TopoModelXEncoder("scnn", in_channels=1, hidden_channels=16,
        ...                             conv_order_down=1, conv_order_up=1)  # doctest: +SKIP
        >>> z = encoder(batch.x_1, batch.laplacians(), batch.batch_1)  # doctest: +SKIP
    """

    def __init__(self, kind: str, readout: str = "mean", **model_kwargs: Any) -> None:
        super().__init__()
        if not isinstance(kind, str) or kind not in KINDS:
            raise ValueError(f"`kind` must be one of {tuple(KINDS)}, got {kind!r}")
        if not isinstance(readout, str) or readout not in _READOUTS:
            raise ValueError(f"`readout` must be one of {_READOUTS}, got {readout!r}")
        _check_widths(kind, model_kwargs)
        import importlib

        module, cls = KINDS[kind]
        self.kind = kind
        self.readout = readout
        self.model_kwargs = dict(model_kwargs)
        self.model = getattr(importlib.import_module(module), cls)(**model_kwargs)
        self.lifts = torch.nn.ModuleList()
        if kind == "scn2":  # SCN2 keeps the widths: lift the three signals to them
            widths = [int(model_kwargs[f"in_channels_{k}"]) for k in range(3)]
            self.lifts = torch.nn.ModuleList(torch.nn.Linear(1, w) for w in widths)
        self.edge_channels = self._probe_width()  # D, the model's per-edge width
        self.out_channels = self.edge_channels * (2 if readout == "energies" else 1)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise the lifts and every TopoModelX layer that has ``reset_parameters``."""
        for m in self.modules():
            if m is not self and hasattr(m, "reset_parameters"):
                m.reset_parameters()

    def _probe_width(self) -> int:
        from topo_contrastive.complex import ComplexOperators

        ops = ComplexOperators.from_simplices([[0, 1], [1, 2], [0, 2]], [[0, 1, 2]])
        with torch.no_grad():
            h = self._edge_features(torch.zeros(3, self._in_channels()), ops.laplacians(), 1)
        return int(h.shape[-1])

    def _in_channels(self) -> int:
        kw = self.model_kwargs
        if self.kind == "sccnn":
            return int(kw["in_channels_all"][1])
        if self.kind == "scn2":
            return 1
        return int(kw["in_channels"])

    # ------------------------------------------------------------------ operators
    def _operators(self, L: Laplacians, times: int) -> dict[str, Tensor]:
        ops = L.complex
        if ops is None:
            raise ValueError(
                "TopoModelXEncoder takes the other operators of its model from the complex of "
                "`laplacians`: pass ComplexOperators.laplacians() or ComplexData.laplacians() "
                "(a Laplacians that carries its complex), not a pair of tensors"
            )

        cache, key = L.cache, ("topomodelx", times)
        if key not in cache:
            names = ["B1", "B2", "L0", "L_down", "L_up", "L1", "L2", "L2_down", "L2_up"]
            base = {n: ops.operator(n, device=L.device, dtype=L.dtype) for n in names}
            cache[key] = {n: _replicate(t, times) for n, t in base.items()}
        return cache[key]

    def _edge_features(self, x: Tensor, L: Laplacians, times: int) -> Tensor:
        """The model's per-edge output ``[rows, D]`` of ``x`` ``[rows, C]``."""
        model = self.model
        if self.kind == "scnn":
            return model(x, _replicate(L.down, times), _replicate(L.up, times))
        op = self._operators(L, times)
        x_0 = torch.mm(op["B1"], x)  # divergence of the flow
        x_2 = torch.mm(op["B2"].t(), x)  # curl of the flow
        if self.kind == "sccnn":
            if int(self.model_kwargs.get("sc_order", 2)) == 2:
                laps = (op["L0"], op["L_down"], op["L_up"], op["L2"])
            else:
                laps = (op["L0"], op["L_down"], op["L_up"], op["L2_down"], op["L2_up"])
            return model((x_0, x, x_2), laps, (op["B1"], op["B2"]))[1]
        if self.kind == "scn2":
            lifted = [lift(s) for lift, s in zip(self.lifts, (x_0, x, x_2), strict=True)]
            return model(*lifted, op["L0"], op["L1"], op["L2"])[1]
        # SAN: its layers with the harmonic projection (I - eps L1)^order, sparse
        eye = torch.sparse_coo_tensor(
            torch.arange(op["L1"].shape[0]).repeat(2, 1), torch.ones(op["L1"].shape[0]),
            op["L1"].shape, dtype=x.dtype, device=x.device, check_invariants=False,
        )
        step = (eye - model.epsilon_harmonic * op["L1"]).coalesce()
        proj = step
        for _ in range(int(model.order_harmonic) - 1):
            proj = torch.sparse.mm(proj, step).coalesce()
        h = x
        for layer in model.layers:
            h = layer(h, op["L_up"], op["L_down"], proj)
        return h

    # ------------------------------------------------------------------ forward
    def _layout(
        self, x: Tensor, L: Laplacians, batch: Tensor | None
    ) -> tuple[Tensor, Tensor, int, int]:
        """The rows ``[rows, C]`` of ``x``, their batch vector, the number of samples and
        how many times the operators repeat on the diagonal (``B`` flows on one complex)."""
        if not isinstance(x, Tensor) or not x.is_floating_point():
            raise TypeError(f"`x` must be a floating tensor, got {type(x).__name__}")
        if x.dim() == 1:
            x = x.unsqueeze(-1)
        n1 = L.num_cells
        if x.dim() == 3:  # dense samples [B, N1, C] on one complex: PyG's rows and batch
            if batch is not None:
                raise ValueError("`batch` is only used with a 2-D `x`")
            if L.num_blocks > 1:
                raise ValueError("a batch of complexes takes `x` [sum N1, C] with `batch`")
            num = int(x.shape[0])
            x = x.reshape(-1, x.shape[-1])
            batch = torch.arange(num, device=x.device).repeat_interleave(n1)
        rows = int(x.shape[0])
        if rows == n1:
            if L.num_blocks > 1 or (L.ptr is not None and batch is not None):
                return x, batch, check_blocks_batch(batch, L), 1  # a batch of complexes
            return x, torch.zeros(rows, dtype=torch.long, device=x.device), 1, 1
        if batch is None or rows % n1 or L.num_blocks > 1:  # else: B flows on one complex
            raise ValueError(
                f"`x` has {rows} rows but the operators are [{n1}, {n1}]; for a PyG batch of "
                "flows on one complex pass `batch`"
            )
        times = rows // n1
        expected = torch.arange(times, device=x.device).repeat_interleave(n1)
        if batch.shape != expected.shape or not torch.equal(batch.long(), expected):
            raise ValueError(f"`batch` must number {times} samples in blocks of N1 = {n1} rows")
        return x, batch, times, times

    def edge_embeddings(
        self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None
    ) -> Tensor:
        """The model's per-edge output before the readout: ``[sum N1, D]`` on a batch of
        complexes (``x`` ``[sum N1, C]`` with ``batch``, one sample or more), ``[B, N1, D]``
        for the layouts on one complex (as :meth:`SCNN.edge_embeddings
        <topo_contrastive.nn.SCNN.edge_embeddings>`).

        Raises:
            TypeError, ValueError: as :meth:`forward`.
        """
        L = as_laplacians(laplacians, (1, 1))
        n1 = L.num_cells
        complexes = L.ptr is not None and batch is not None and x.dim() <= 2 and (
            int(x.shape[0]) == n1
        )
        rows, batch, num, times = self._layout(x, L, batch)
        h = self._edge_features(rows, L, times)  # [rows, D]
        if complexes:
            return h  # [sum N1, D]: a batch of complexes (one sample or more)
        return h.reshape(times, n1, h.shape[-1])  # [B, N1, D]

    def forward(self, x: Tensor, laplacians: Laplacians, batch: Tensor | None = None) -> Tensor:
        """Return the embedding ``[B, out_channels]`` (see the class)."""
        from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

        L = as_laplacians(laplacians, (1, 1))
        rows, batch, num, times = self._layout(x, L, batch)
        h = self._edge_features(rows, L, times)  # [rows, D]
        if self.readout == "energies":
            from topo_contrastive.nn.hodge_readout import HodgeReadout

            down, up = _replicate(L.down, times), _replicate(L.up, times)
            energies = HodgeReadout(None, pool="none", energies=True)
            return energies(h, batch, Laplacians(down, up, symmetric=True), size=num)
        pool = {"mean": global_mean_pool, "sum": global_add_pool, "max": global_max_pool}
        return pool[self.readout](h, batch, size=num)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.model_kwargs.items())
        return f"{type(self).__name__}({self.kind!r}, readout={self.readout!r}, {args})"
