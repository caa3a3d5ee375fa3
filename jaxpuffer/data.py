"""Loaders for the UCI files the papers use (``../shared/datasets/README.md`` describes them).

The project never ships the data: each loader takes a path to the user's copy. Rows with a
missing value (``?``) in any requested column are dropped and *counted* (never turned into a
number); a wrong path, a row with the wrong number of fields or a non-numeric entry in a numeric
column raises a ``ValueError`` that names the file and the line.
"""

from __future__ import annotations

import csv
import pathlib
from typing import NamedTuple

import numpy as np

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income",
)
ADULT_NUMERIC = frozenset({"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"})
HUNGARIAN_COLUMNS = (
    "age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang", "oldpeak", "slope", "ca", "thal", "num",
)
# The Kantorovich paper's order of Adult's education levels (its Figure 3; adult.names lists the
# same order). Adult has two more levels, 5th-6th and Preschool, which the paper's 14-point
# alphabet leaves out.
KANTOROVICH_EDUCATION = (
    "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc", "9th",
    "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate",
)
EXTRA_EDUCATION = ("5th-6th", "Preschool")


class Table(NamedTuple):
    """Columns of a loaded file: ``columns[name]`` is a float array (numeric columns) or a str
    array; ``rows`` kept, ``dropped`` rows removed for a missing value, per the requested columns."""

    columns: dict
    rows: int
    dropped: int


def _read(path, names, numeric, columns, sep_space: bool) -> Table:
    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"path {str(path)!r} is not a file (point the loader at your copy of the UCI file)")
    columns = tuple(names) if columns is None else tuple(columns)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise ValueError(f"columns must be among {', '.join(names)}; got {unknown[0]!r}")
    index = [names.index(c) for c in columns]
    kept: list[list[str]] = []
    dropped = 0
    with path.open(newline="") as handle:
        for line_no, row in enumerate(csv.reader(handle, skipinitialspace=sep_space), start=1):
            if not row or all(not field.strip() for field in row):
                continue  # blank lines (the Adult file ends with one)
            if len(row) != len(names):
                raise ValueError(f"{path.name} line {line_no}: expected {len(names)} comma-separated fields, got {len(row)}")
            values = [row[i].strip() for i in index]
            if any(v == "?" for v in values):
                dropped += 1
                continue
            for name, value in zip(columns, values):
                if name in numeric:
                    try:
                        float(value)
                    except ValueError:
                        raise ValueError(f"{path.name} line {line_no}: column {name!r} is not a number: {value!r}") from None
            kept.append(values)
    if not kept:
        raise ValueError(f"{path.name}: no complete rows in columns {columns}")
    table = np.array(kept, dtype=object).reshape(len(kept), len(columns))
    out = {name: (table[:, k].astype(float) if name in numeric else table[:, k].astype(str)) for k, name in enumerate(columns)}
    return Table(out, len(kept), dropped)


def load_adult(path, columns=None) -> Table:
    """UCI Adult (``adult.data``): comma + space separated, no header, ``?`` for missing.

    ``columns``: names from :data:`ADULT_COLUMNS` to load (default all); rows missing any of them
    are dropped and counted in ``Table.dropped``.
    """
    return _read(path, ADULT_COLUMNS, ADULT_NUMERIC, columns, sep_space=True)


def load_hungarian(path, columns=None) -> Table:
    """UCI Heart Disease, Hungarian (``processed.hungarian.data``): all columns numeric."""
    return _read(path, HUNGARIAN_COLUMNS, frozenset(HUNGARIAN_COLUMNS), columns, sep_space=False)


def education_index(levels, *, others: str = "drop") -> tuple[np.ndarray, np.ndarray]:
    """Map Adult education levels to the Kantorovich paper's numeric alphabet 1…14.

    ``others``: what to do with 5th-6th and Preschool, absent from the paper's alphabet —
    ``"drop"`` (the paper's 14 points; the mask says which rows are kept) or ``"append"`` (they
    become 15 and 16). Returns (index per kept row, mask of kept rows). Unknown levels raise.
    """
    if others not in ("drop", "append"):
        raise ValueError(f"others must be 'drop' or 'append'; got {others!r}")
    order = KANTOROVICH_EDUCATION + EXTRA_EDUCATION
    lookup = {name: k + 1 for k, name in enumerate(order)}
    levels = np.asarray(levels).astype(str)
    unknown = sorted(set(levels) - set(lookup))
    if unknown:
        raise ValueError(f"levels must be Adult education levels; got {unknown[0]!r}")
    index = np.array([lookup[v] for v in levels])
    keep = index <= len(KANTOROVICH_EDUCATION) if others == "drop" else np.ones(index.shape, bool)
    return index[keep].astype(float), keep


def max_log_ratio(samples_i, samples_j, bins, *, min_count: int = 20) -> tuple[float, int]:
    """Empirical indistinguishability of two samples on common ``bins`` (edges): the max over bins
    of |log P̂(bin | s_i) / P̂(bin | s_j)| among bins with at least ``min_count`` samples of each
    secret (sparser bins measure sampling noise, not the mechanism), and the number of bins that
    hold samples of one secret only (an unbounded empirical ratio)."""
    counts_i, _ = np.histogram(np.asarray(samples_i), bins=bins)
    counts_j, _ = np.histogram(np.asarray(samples_j), bins=bins)
    p_i, p_j = counts_i / counts_i.sum(), counts_j / counts_j.sum()
    both = (counts_i >= min_count) & (counts_j >= min_count)
    one_only = int(np.sum((counts_i > 0) != (counts_j > 0)))
    ratio = float(np.max(np.abs(np.log(p_i[both] / p_j[both])))) if both.any() else float("nan")
    return ratio, one_only
