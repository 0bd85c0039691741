"""BM25 search over the catalog (a stand-in for WebShop's pyserini index).

Each product is one document: its title, bullet points and description, split
into lower-case alphanumeric words (no stemming, no stop-word removal; BM25's
inverse document frequency already makes common words cheap). A query is split
the same way and each distinct query word counts once. Scores use the Lucene
form of BM25 with pyserini's default parameters k1 = 0.9, b = 0.4::

    idf(w)      = ln(1 + (N - df(w) + 0.5) / (df(w) + 0.5))
    norm(d)     = k1 * (1 - b + b * |d| / avgdl)
    score(d, q) = sum over w in q of idf(w) * tf(w, d) * (k1 + 1) / (tf(w, d) + norm(d))

Only documents sharing a word with the query are returned, best first, ties in
catalog (ASIN) order, at most ``RESULT_LIMIT`` of them (WebShop shows 50).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cache

import numpy as np

from evoflow.envs.webshop.catalog import catalog
from evoflow.envs.webshop.reward import words

K1 = 0.9
B = 0.4
RESULT_LIMIT = 50


@dataclass(frozen=True, eq=False)
class Bm25Index:
    """Postings per word: (document numbers, term frequencies), plus lengths.

    ``norm`` holds each document's length term ``k1 * (1 - b + b * |d| / avgdl)``.
    """

    postings: dict[str, tuple[np.ndarray, np.ndarray]]
    lengths: np.ndarray
    norm: np.ndarray

    @classmethod
    def build(cls, documents: list[str]) -> Bm25Index:
        docs: dict[str, list[int]] = defaultdict(list)
        freqs: dict[str, list[int]] = defaultdict(list)
        lengths = []
        for number, text in enumerate(documents):
            tokens = words(text)
            lengths.append(len(tokens))
            for word, count in Counter(tokens).items():
                docs[word].append(number)
                freqs[word].append(count)
        postings = {
            w: (np.asarray(docs[w], dtype=np.int64), np.asarray(freqs[w], dtype=float))
            for w in docs
        }
        sizes = np.asarray(lengths, dtype=float)
        return cls(postings, sizes, K1 * (1 - B + B * sizes / sizes.mean()))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros where nothing matches)."""
        n_docs = len(self.lengths)
        total = np.zeros(n_docs)
        for word in dict.fromkeys(words(query)):
            if word not in self.postings:
                continue
            numbers, tf = self.postings[word]
            idf = math.log(1 + (n_docs - len(numbers) + 0.5) / (len(numbers) + 0.5))
            total[numbers] += idf * tf * (K1 + 1) / (tf + self.norm[numbers])
        return total

    def search(self, query: str, limit: int = RESULT_LIMIT) -> list[int]:
        """Numbers of the best-scoring documents, best first, ties by number."""
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > limit:  # keep the top ``limit`` scores and every tie with them
            cutoff = np.partition(scores[hits], len(hits) - limit)[len(hits) - limit]
            hits = hits[scores[hits] >= cutoff]
        order = np.lexsort((hits, -scores[hits]))
        return [int(i) for i in hits[order][:limit]]


@cache
def catalog_index() -> Bm25Index:
    """BM25 index of all catalog products, in catalog order."""
    return Bm25Index.build([p.text for p in catalog().products])


def search_products(query: str, limit: int = RESULT_LIMIT) -> list[str]:
    """ASINs of the products that best match ``query``, best first."""
    products = catalog().products
    return [products[i].asin for i in catalog_index().search(query, limit)]
