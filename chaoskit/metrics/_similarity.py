"""TF-IDF cosine similarity of short texts (word and character 3-5-gram features), with scikit-learn loaded lazily."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

__all__ = ["INSTALL_HINT", "Vectors", "cosine_matrix", "load_sklearn_text"]

INSTALL_HINT = "the trajectory metrics need scikit-learn: pip install 'chaoskit[metrics]' (or scikit-learn)"


def load_sklearn_text() -> Any:
    """``sklearn.feature_extraction.text``, imported now (never at chaoskit's import): the metrics' only use of it."""
    try:
        return importlib.import_module("sklearn.feature_extraction.text")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc


def _view(docs: Sequence[str], **options: Any) -> Any:
    """The L2-normalised sparse TF-IDF rows of one view; None when the documents share no feature at all (an
    empty vocabulary: every document empty)."""
    vectorizer = load_sklearn_text().TfidfVectorizer(lowercase=True, **options)
    try:
        return vectorizer.fit_transform(list(docs)).tocsr()
    except ValueError:  # "empty vocabulary": nothing to compare, every similarity is 0
        return None


class Vectors:
    """The TF-IDF vectors of ``docs`` (word view and ``char_wb`` 3-5-gram view, both fitted on ``docs`` alone).

    Similarities are computed on demand for chosen rows and columns (:meth:`block`), so a caller that needs only
    some pairs (CDI: each step against the task; RIC: each step against a bounded window before it) uses memory
    and time linear in the number of documents, not quadratic. The vectors themselves are sparse."""

    def __init__(self, docs: Sequence[str]) -> None:
        self.n = len(docs)
        self._views = [
            v
            for v in (_view(docs, analyzer="word"), _view(docs, analyzer="char_wb", ngram_range=(3, 5)))
            if v is not None
        ]

    def block(self, rows: slice, cols: slice) -> Any:
        """The similarity of documents ``rows`` against documents ``cols`` as a dense NumPy array: the mean of
        the two views' cosines, clipped to [0, 1]. A document with no feature has similarity 0 with every one."""
        import numpy as np  # with scikit-learn, never at chaoskit's import

        r = range(self.n)[rows]
        c = range(self.n)[cols]
        total = np.zeros((len(r), len(c)))
        for x in self._views:
            total += (x[rows] @ x[cols].T).toarray().clip(0.0, 1.0)
        return total / 2


def cosine_matrix(docs: Sequence[str]) -> Any:
    """Pairwise similarity of ``docs`` as a square NumPy array (see :class:`Vectors`). Memory is quadratic in
    ``len(docs)``: the metrics themselves use :meth:`Vectors.block` on bounded windows instead."""
    return Vectors(docs).block(slice(None), slice(None))
