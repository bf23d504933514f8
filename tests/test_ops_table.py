"""docs/supported.md is generated from the frontend's registries and must be current."""

from pathlib import Path

from trainkernel.supported import render

DOC = Path(__file__).resolve().parents[1] / "docs" / "supported.md"


def test_supported_table_is_current():
    assert DOC.read_text() == render(), "regenerate: python -m trainkernel.supported > docs/supported.md"


def test_table_lists_every_handler():
    from trainkernel.frontend.aten_to_tk import HANDLERS

    text = render()
    assert all(f"`{name}`" in text for name in HANDLERS)
    assert f"({len(HANDLERS)})" in text
