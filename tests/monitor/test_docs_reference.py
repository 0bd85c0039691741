"""The generated reference pages: the committed ones match their sources, and
a page that drifts is caught."""

from __future__ import annotations

from evoflow.docsgen import PAGES, stale_pages, write_pages


def test_the_committed_reference_pages_match_their_sources():
    assert stale_pages() == []


def test_a_changed_page_is_stale_until_rewritten(tmp_path):
    assert sorted(write_pages(tmp_path)) == sorted(PAGES)
    assert stale_pages(tmp_path) == []
    page = tmp_path / "docs" / "reference" / "config.md"
    page.write_text(page.read_text().replace("|", "¦", 1))
    assert stale_pages(tmp_path) == ["docs/reference/config.md"]
    assert write_pages(tmp_path) == ["docs/reference/config.md"]
