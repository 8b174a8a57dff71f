"""The one formatter of accuracies as ``mean ± std`` (tables, printed summaries, examples)."""

from __future__ import annotations

from collections.abc import Sequence


def format_mean_std(
    mean: float | Sequence[float],
    std: float | None = None,
    *,
    scale: float = 1.0,
    digits: int = 1,
    widths: tuple[int, int] = (0, 0),
) -> str:
    """``"80.5 ± 4.2"``: a mean and a standard deviation, or those of a sequence of values.

    Accuracy claims are reported as mean ± std over splits and seeds (``docs/design.md``);
    every table and summary of the package writes them with this function, so that they all
    read alike (``docs/check_quick_table.py`` parses the cells of Table 1).

    Args:
        mean (float or sequence of float): the mean, or the values whose mean and population
            standard deviation (``ddof=0``, as ``numpy.std``) are shown when ``std`` is ``None``.
        std (float, optional): the standard deviation (default ``None``: from ``mean``'s values).
        scale (float): a factor applied to both (default ``1.0``; ``100`` turns fractions into
            percent).
        digits (int): decimals of both numbers (default ``1``).
        widths (tuple of int): minimum field widths of the mean and the std, right-aligned
            (default ``(0, 0)``: no padding).

    Returns:
        str: ``f"{mean:.{digits}f} ± {std:.{digits}f}"`` with the given widths.

    Raises:
        ValueError: ``std`` is ``None`` and ``mean`` holds no values; ``digits`` is negative.

    Example:
        >>> format_mean_std(80.456, 4.21)
        '80.5 ± 4.2'
        >>> format_mean_std([0.5, 1.0], scale=100)
        '75.0 ± 25.0'
    """
    from topo_contrastive._utils.checks import check_int

    digits = check_int(digits, "digits", 0)
    if std is None:
        import numpy as np

        values = np.asarray(mean, dtype=np.float64).ravel()
        if values.size == 0:
            raise ValueError("`mean` holds no values to summarise (and `std` is None)")
        m, s = float(np.mean(values)), float(np.std(values))
    else:
        m, s = float(mean), float(std)  # type: ignore[arg-type]
    return f"{scale * m:{widths[0]}.{digits}f} ± {scale * s:{widths[1]}.{digits}f}"
