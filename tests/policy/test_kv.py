"""Which rows of one call share an encoded opening (hand-worked)."""

from __future__ import annotations

from evoflow.policy.kv import shared_prefixes


def test_rows_opening_alike_form_one_cluster_with_their_common_prefix():
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 2, 3, 4, 7], [8, 8]]
    # sorted: rows 0, 2 (share 4 tokens), 1 (shares 3 with row 2), 3 (none)
    assert shared_prefixes(prompts, [None] * 4, [0, 1, 2, 3], 3) == [([0, 2, 1], 3)]
    # a minimum of 4 leaves row 1 alone
    assert shared_prefixes(prompts, [None] * 4, [0, 1, 2, 3], 4) == [([0, 2], 4)]


def test_clusters_keep_one_adapter_and_leave_a_token_to_encode():
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 2, 3, 4, 7], [8, 8]]
    tags = [None, "a", None, None]
    assert shared_prefixes(prompts, tags, [0, 1, 2, 3], 3) == [([0, 2], 4)]
    # rows not offered (already cached) are never clustered
    assert shared_prefixes(prompts, [None] * 4, [1, 3], 1) == []
    # equal prompts: every row still feeds its last token
    assert shared_prefixes([[4, 5, 6], [4, 5, 6]], [None, None], [0, 1], 2) == [
        ([0, 1], 2)
    ]
