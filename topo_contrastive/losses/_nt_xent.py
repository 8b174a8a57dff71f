"""The NT-Xent core of :class:`InfoNCE` and :class:`HodgeDebiasedInfoNCE` (private): the option
checks, the unit rows of both views gathered across ``torch.distributed`` ranks, and the loss
with optional log-weights of the negatives (``None`` is weight one, so uniform weights give
InfoNCE bit for bit). Design notes: docs/design.md §2.5, §7.6."""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from topo_contrastive._utils.checks import check_bool, check_real

#: Smallest accepted temperature: ``1 / temperature`` stays far below float32's largest value
#: (3.4e38), so the logits never overflow (practical temperatures are 0.05-1).
MIN_TEMPERATURE = 1e-6


def eager() -> bool:
    """Whether checks that read values (host syncs) run: not while ``torch.compile`` traces."""
    return not torch.compiler.is_compiling()


def check_finite(x: Tensor, name: str) -> None:
    if eager() and not x.is_meta and not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` must be finite, got NaN or inf entries")


class Options(NamedTuple):
    temperature: float
    include_positive_in_denominator: bool
    gather_distributed: bool
    reduction: str
    negatives: str


def check_options(
    temperature: float, include_positive: bool, gather: bool, reduction: str, negatives: str
) -> Options:
    """The options shared by both losses, checked."""
    temperature = check_real(temperature, "temperature")
    if temperature < MIN_TEMPERATURE:
        raise ValueError(
            f"`temperature` must be finite and >= {MIN_TEMPERATURE:g} (smaller ones overflow the "
            f"logits cos / temperature to inf in float32), got {temperature}"
        )
    check_bool(include_positive, "include_positive_in_denominator")
    for name, value, allowed in (("negatives", negatives, ("both", "cross_view")),
                                 ("reduction", reduction, ("mean", "sum", "none"))):  # fmt: skip
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"`{name}` must be one of {allowed}, got {value!r}")
    if check_bool(gather, "gather_distributed") and not dist.is_available():
        raise ValueError("`gather_distributed=True` needs torch.distributed; this build lacks it")
    return Options(temperature, bool(include_positive), bool(gather), reduction, negatives)


class Loss(nn.Module):
    """The options of both losses, checked once; ``repr`` shows those of ``_shown``."""

    _shown = ("temperature", "include_positive_in_denominator", "gather_distributed", "reduction")

    def __init__(
        self,
        temperature: float = 0.5,
        include_positive_in_denominator: bool = True,
        gather_distributed: bool = False,
        reduction: str = "mean",
        negatives: str = "both",
    ) -> None:
        super().__init__()
        self.__dict__.update(check_options(temperature, include_positive_in_denominator,
                                           gather_distributed, reduction, negatives)._asdict())

    @property
    def options(self) -> Options:
        return Options(*(getattr(self, name) for name in Options._fields))

    def extra_repr(self) -> str:
        cross = ", negatives='cross_view'" if self.negatives == "cross_view" else ""
        return ", ".join(f"{k}={getattr(self, k)!r}" for k in self._shown) + cross


def _gather(x: Tensor, sizes: list[int]) -> Tensor:
    """All-gather ``x`` ``[sizes[rank], ...]`` into ``[sum(sizes), ...]`` (a padded collective
    whose backward sums the gradient over ranks: that of the sum of all ranks' losses)."""
    from torch.distributed.nn.functional import all_gather

    if x.shape[0] < max(sizes):
        x = torch.cat([x, x.new_zeros((max(sizes) - x.shape[0], *x.shape[1:]))])
    return torch.cat([t[:n] for t, n in zip(all_gather(x), sizes, strict=True)])


class Pool(NamedTuple):
    """Anchors (local rows) and candidates (all ranks' rows) of both views, unit norm."""

    a1: Tensor  # [B, D]
    a2: Tensor  # [B, D]
    c1: Tensor  # [M, D], a1 itself in one process
    c2: Tensor  # [M, D]
    offset: int  # pool row of local sample 0
    world_size: int
    sizes: list[int]  # rows per rank

    def gather(self, x: Tensor) -> Tensor:
        """A per-sample tensor ``[B, ...]`` of every rank, without gradient: ``[M, ...]``."""
        return x if self.world_size == 1 else _gather(x.detach().to(self.a1.device), self.sizes)


def unit_rows(z: Tensor) -> Tensor:
    """Rows of ``z`` at unit L2 norm, divided first by their largest entry (a constant for
    autograd) so that finite rows of any magnitude neither overflow nor underflow."""
    scale = z.detach().abs().amax(dim=1, keepdim=True)  # [B, 1]
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return F.normalize(z / scale, dim=1)


def make_pool(z1: Tensor, z2: Tensor, gather_distributed: bool) -> Pool:
    """Check and normalise both views ``[B, D]`` and, when distributed, gather all ranks'."""
    for name, z in (("z1", z1), ("z2", z2)):
        if not isinstance(z, Tensor) or z.dim() != 2 or not z.is_floating_point():
            got = f"{z.dtype} {tuple(z.shape)}" if isinstance(z, Tensor) else type(z).__name__
            error = ValueError if isinstance(z, Tensor) and z.is_floating_point() else TypeError
            raise error(f"`{name}` must be a floating tensor of shape [B, D], got {got}")
    if z1.shape != z2.shape or z1.device != z2.device or z1.numel() == 0:
        raise ValueError(
            f"`z1` and `z2` must have the same shape [B, D], non-empty, on one device, got "
            f"{tuple(z1.shape)} on {z1.device} and {tuple(z2.shape)} on {z2.device}"
        )
    for name, z in (("z1", z1), ("z2", z2)):
        if eager() and not z.is_meta and not bool(torch.isfinite(z.detach()).all()):
            bad = (~torch.isfinite(z.detach())).any(dim=1).nonzero().flatten().tolist()
            raise ValueError(
                f"`{name}` must be finite, got NaN or inf in rows {bad[:10]} (an encoder that "
                "diverged, or NaN in its input)"
            )
    dtype = torch.promote_types(torch.promote_types(z1.dtype, z2.dtype), torch.float32)
    u1, u2 = unit_rows(z1.to(dtype)), unit_rows(z2.to(dtype))  # [B, D]
    B = u1.shape[0]
    world = dist.get_world_size() if gather_distributed and dist.is_initialized() else 1
    if world == 1:
        pool = Pool(u1, u2, u1, u2, 0, 1, [B])
    else:
        rank = dist.get_rank()
        sizes = [int(n) for n in _gather(torch.tensor([B], device=u1.device), [1] * world)]
        c1, c2 = _gather(u1, sizes), _gather(u2, sizes)  # [M, D], gradients flowing back
        pool = Pool(u1, u2, c1, c2, sum(sizes[:rank]), world, sizes)
    if sum(pool.sizes) < 2:
        raise ValueError(
            f"a contrastive loss needs at least 2 samples (one anchor and one negative), got a "
            f"batch of {sum(pool.sizes)} sample(s) in `z1`/`z2`"
        )
    return pool


def check_weights(weights: Tensor, pool: Pool) -> Tensor:
    """Precomputed negative weights ``[B, M]``, checked, detached, in the loss dtype."""
    B, M = pool.a1.shape[0], pool.c1.shape[0]
    if not isinstance(weights, Tensor):
        raise TypeError(f"`weights` must be a tensor [B, M], got {type(weights).__name__}")
    if tuple(weights.shape) != (B, M):
        where = "" if pool.world_size == 1 else f" (M = all {pool.world_size} ranks' samples)"
        raise ValueError(
            f"`weights` must have shape [B, M] = [{B}, {M}]{where}, got {tuple(weights.shape)}"
        )
    w = weights.detach().to(device=pool.a1.device, dtype=pool.a1.dtype)
    check_finite(w, "weights")
    if not eager() or w.is_meta:
        return w
    if (w < 0).any():
        raise ValueError(f"`weights` must be >= 0, got minimum {w.min().item():.6g}")
    rows = torch.arange(B, device=w.device)
    neg = w.index_put((rows, rows + pool.offset), torch.zeros((), dtype=w.dtype, device=w.device))
    empty = (neg.sum(dim=1) <= 0).nonzero().flatten()
    if empty.numel() > 0:
        raise ValueError(
            f"`weights` must give every anchor a negative with weight > 0, got all-zero weights "
            f"off their own column for anchors {empty.tolist()[:10]}"
        )
    return w


def nt_xent(pool: Pool, options: Options, log_weights: Tensor | None = None) -> Tensor:
    """NT-Xent of both views: anchor ``(i, a)``, positive ``(i, b)``, negatives ``(m, v)`` for
    ``m != i`` (``v = b`` only for ``cross_view``) with log-weights ``[B, M]`` of sample ``m``:
    ``logsumexp([s_pos] + [s_neg + log w_im]) - s_pos``, ``s = cos / temperature``."""
    B, M, off = pool.a1.shape[0], pool.c1.shape[0], pool.offset
    anchors = torch.cat([pool.a1, pool.a2], dim=0)  # [2B, D]
    cands = torch.cat([pool.c1, pool.c2], dim=0)  # [2M, D]
    logits = anchors @ cands.T / options.temperature  # [2B, 2M]
    if log_weights is None:
        log_weights = logits.new_zeros(B, M)
    log_w = log_weights.repeat(2, 2)  # [2B, 2M]: both views of sample m get w_im
    rows = torch.arange(2 * B, device=logits.device)
    view = torch.div(rows, B, rounding_mode="floor")  # 0 for view-1 anchors, 1 for view-2
    sample = rows - view * B + off  # pool index of the anchor's own sample
    neg_inf = torch.tensor(float("-inf"), dtype=logits.dtype, device=logits.device)
    if options.negatives == "cross_view":  # the anchor's own view holds no negative
        cols = torch.div(torch.arange(2 * M, device=logits.device), M, rounding_mode="floor")
        log_w = log_w.masked_fill(view[:, None] == cols[None, :], float("-inf"))
    log_w = log_w.index_put((rows, view * M + sample), neg_inf)  # self-similarity
    pos_col = (1 - view) * M + sample
    pos_log_w = logits.new_zeros(()) if options.include_positive_in_denominator else neg_inf
    log_w = log_w.index_put((rows, pos_col), pos_log_w)  # positive: weight 1 or left out
    out = torch.logsumexp(logits + log_w, dim=1) - logits[rows, pos_col]  # [2B]
    if options.reduction == "none":
        return out.view(2, B)
    if options.reduction == "sum":
        return out.sum() if pool.world_size == 1 else out.sum() * pool.world_size
    return out.mean() if pool.world_size == 1 else out.sum() * (pool.world_size / (2 * M))
