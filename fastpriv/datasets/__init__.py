"""Bundled data: the cleaned UCI Adult table, its generalization hierarchies, synthetic data.

Adult
-----
:func:`load_adult` returns the standard 45,222-row "Adult" table of the k-anonymity /
ℓ-diversity / t-closeness literature, shipped inside the package as a compact Parquet file
(``data/adult.parquet``, built by :mod:`fastpriv.datasets._build_adult`).

* **Source:** Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI Machine Learning
  Repository. https://doi.org/10.24432/C5XW20
* **Licence:** Creative Commons Attribution 4.0 International (CC BY 4.0).
* **Cleaning rule:** ``adult.data`` (32,561 records) and ``adult.test`` (16,281 records, its
  junk first line skipped, the trailing ``.`` of ``income`` stripped) are concatenated in
  that order, leading spaces are stripped, and every row with a missing value (``?``) in any
  column is dropped: 48,842 → 45,222 rows. Columns are renamed to snake_case.

Hierarchies
-----------
Generalization hierarchies for the Adult QIs, in the ARX CSV layout (UTF-8, ``;``-separated,
no header, one row per original value, one column per level: level 0 is the value itself,
the last level is ``*``). :func:`list_hierarchies` names them, :func:`hierarchy_path`
locates one. Every value of the cleaned Adult table appears in its attribute's file.

* ``age`` — 6 levels: exact; 5-, 10-, 20-, 40-year intervals aligned at multiples of the
  width, labelled ``[20, 25)``, ``[20, 30)``, ``[20, 40)``, ``[0, 40)``; ``*``. Rows for
  every integer age 0..119 (Adult has 17..90).
* ``marital_status`` — 3 levels: exact; ``Married`` (Married-civ-spouse, Married-AF-spouse,
  Married-spouse-absent) / ``Never-married`` / ``Was-married`` (Divorced, Separated,
  Widowed); ``*``.
* ``race``, ``sex`` — 2 levels: exact; ``*``.

(these four are the hierarchies of the (c,k)-safety paper's Adult experiments: a lattice of
6·3·2·2 = 72 nodes), and, in the spirit of the ARX Adult example:

* ``workclass`` — 4 levels: exact; ``Private`` / ``Self-employed`` (Self-emp-inc,
  Self-emp-not-inc) / ``Government`` (Federal-, State-, Local-gov) / ``Without-pay``;
  ``Non-government`` (Private, Self-employed) / ``Government`` / ``Without-pay``; ``*``.
* ``education`` — 4 levels: exact; ``Primary school`` (Preschool … 7th-8th) /
  ``Secondary school`` (9th … 12th) / ``High school graduate`` (HS-grad) / ``College``
  (Some-college, Assoc-voc, Assoc-acdm) / ``Undergraduate`` (Bachelors) / ``Graduate``
  (Masters, Prof-school, Doctorate); ``Primary/secondary school`` / ``High school/college``
  / ``Higher education``; ``*``.
* ``occupation`` — 3 levels: exact; ``White-collar`` (Adm-clerical, Exec-managerial,
  Prof-specialty, Sales, Tech-support) / ``Blue-collar`` (Craft-repair, Farming-fishing,
  Handlers-cleaners, Machine-op-inspct, Transport-moving) / ``Service`` (Other-service,
  Priv-house-serv, Protective-serv) / ``Other`` (Armed-Forces); ``*``.
* ``native_country`` — 4 levels: exact; region (North America — incl. the US outlying
  territories —, Central America, Caribbean — incl. Puerto-Rico —, South America, Western /
  Southern / Eastern Europe, East / Southeast / South / Western Asia, and ``Unknown`` for
  the ambiguous UCI value ``South``); continent (``Americas``, ``Europe``, ``Asia``,
  ``Unknown``); ``*``.

Synthetic
---------
:func:`synthetic`, :func:`synthetic_batches` and :func:`synthetic_release` generate seeded
releases of any size (see :mod:`fastpriv.datasets.synthetic`).

Importing this package is cheap: pyarrow/NumPy are imported on first use only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = [
    "load_adult",
    "adult_path",
    "hierarchy_path",
    "list_hierarchies",
    "synthetic",
    "synthetic_batches",
    "synthetic_release",
    "ADULT_COLUMNS",
    "ADULT_CITATION",
    "ADULT_LICENSE",
]

_HERE = Path(__file__).resolve().parent
_HIERARCHIES = _HERE / "hierarchies"

#: Column names of :func:`load_adult`, in order.
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
                 "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                 "hours_per_week", "native_country", "income")
ADULT_CITATION = ("Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning "
                  "Repository. https://doi.org/10.24432/C5XW20")
ADULT_LICENSE = "CC BY 4.0"

# synthetic.py imports NumPy/pyarrow inside its functions, so this import is cheap. Importing
# the names here (not lazily) keeps ``fastpriv.datasets.synthetic`` the *function* even when
# someone imports the submodule ``fastpriv.datasets.synthetic`` first.
from ..errors import InputError, InputTypeError  # noqa: E402
from .synthetic import synthetic, synthetic_batches, synthetic_release  # noqa: E402


def adult_path() -> str:
    """Path of the bundled cleaned Adult Parquet file (45,222 rows).

    Source: Becker & Kohavi (1996), UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, licence CC BY 4.0.
    """
    path = _HERE / "data" / "adult.parquet"
    if not path.is_file():
        raise FileNotFoundError(
            f"the bundled Adult file {str(path)!r} is missing; rebuild it with "
            "python -m fastpriv.datasets._build_adult --source <folder with adult.data and "
            "adult.test> --out fastpriv/datasets/data/adult.parquet")
    return str(path)


#: Schema metadata key marking a table read by :func:`load_adult` (kept by select, filter,
#: slice and sort): the bundled hierarchies apply to such a table without being named.
BUNDLED_KEY = b"fastpriv.dataset"


def is_bundled_adult(table: "pa.Table") -> bool:
    """Whether ``table`` comes from :func:`load_adult` (its schema metadata says so)."""
    meta = getattr(getattr(table, "schema", None), "metadata", None) or {}
    return meta.get(BUNDLED_KEY) == b"adult"


def load_adult(columns: Sequence[str] | None = None) -> "pa.Table":
    """Load the cleaned UCI Adult table bundled with fastpriv.

    Source: Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI Machine Learning
    Repository. https://doi.org/10.24432/C5XW20 — licence CC BY 4.0.

    Cleaning rule: ``adult.data`` + ``adult.test`` (junk first line of ``adult.test``
    skipped, trailing ``.`` of its ``income`` stripped, leading spaces stripped),
    concatenated in that order; every row with ``?`` in any column dropped → 45,222 rows.

    Parameters
    ----------
    columns : sequence of str, optional
        Read only these columns (in this order); default all 15.

    Returns
    -------
    pyarrow.Table
        45,222 rows; columns ``age, workclass, fnlwgt, education, education_num,
        marital_status, occupation, relationship, race, sex, capital_gain, capital_loss,
        hours_per_week, native_country, income``. Integer columns are int64, the others
        strings; ``income`` is ``"<=50K"`` or ``">50K"``.

    Examples
    --------
    >>> adult = load_adult()
    >>> adult.num_rows
    45222

    """
    import pyarrow.parquet as pq

    from .._lazy_pandas import defer_pandas

    defer_pandas()      # reading Parquet would import pandas through pyarrow otherwise
    if columns is not None:
        from .._validation import check_columns

        if isinstance(columns, str):
            raise InputTypeError("columns must be a sequence of column names, not a string")
        columns = check_columns(columns, ADULT_COLUMNS, "columns")
    table = pq.read_table(adult_path(), columns=list(columns) if columns is not None else None)
    return table.replace_schema_metadata({BUNDLED_KEY: b"adult"})


def list_hierarchies() -> list[str]:
    """Names of the bundled generalization hierarchies (attribute names), sorted."""
    return sorted(p.stem for p in _HIERARCHIES.glob("*.csv"))


def hierarchy_path(attribute: str) -> str:
    """Path of the bundled ARX-layout hierarchy CSV of an Adult attribute.

    Parameters
    ----------
    attribute : str
        Attribute name as in :func:`load_adult` (``"age"``, ``"marital_status"``, …);
        the raw UCI spelling with hyphens (``"marital-status"``) is accepted too.

    Returns
    -------
    str
        Path of a ``;``-separated CSV without header: one row per original value, one
        column per level (level 0 = the value, last level = ``*``).

    Raises
    ------
    ValueError
        No hierarchy for ``attribute`` (the message lists the available ones).

    """
    if not isinstance(attribute, str):
        raise InputTypeError(f"attribute must be a string, got {type(attribute).__name__}")
    name = attribute.strip().replace("-", "_")
    path = _HIERARCHIES / f"{name}.csv"
    if not name or os.sep in name or not path.is_file():
        raise InputError(f"attribute: no bundled hierarchy for {attribute!r}; available: "
                         f"{', '.join(list_hierarchies())}")
    return str(path)
