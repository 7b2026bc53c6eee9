"""The committed figures (paper_figures/figures/) are the ones today's scripts draw from the committed results/:
a figure left stale after a republication, or a script changed without redrawing, fails here naming the figure.

PNGs are compared pixel by pixel, decoded: the drawing is what must not drift, and pixels do not depend on the
PNG encoder's zlib. (With the pinned matplotlib, fontTools and Pillow, the PNG and PDF bytes match too, here and
under other OpenBLAS and NumPy CPU dispatch: the closing note of issue 34.)"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from .figure_fixtures import FIGURES, REPO, make_all

COMMITTED = REPO / "paper_figures" / "figures"
REDRAW = "MPLBACKEND=Agg python paper_figures/make_all.py (make figures), then commit paper_figures/figures/"


def pixels(path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGBA"))


def pixel_differences(want: np.ndarray, got: np.ndarray) -> str:
    """'' when equal, else what differs: the size, or how many pixels."""
    if want.shape != got.shape:
        return f"size {got.shape[1]}x{got.shape[0]}, committed {want.shape[1]}x{want.shape[0]}"
    n = int((want != got).any(axis=-1).sum())
    return f"{n} of {want.shape[0] * want.shape[1]} pixels differ" if n else ""


def test_pixel_differences_sees_one_pixel_and_a_size():
    a = np.zeros((4, 5, 4), dtype=np.uint8)
    b = a.copy()
    assert pixel_differences(a, b) == ""
    b[2, 3, 1] = 1
    assert pixel_differences(a, b) == "1 of 20 pixels differ"
    assert pixel_differences(a, a[:3]) == "size 5x3, committed 5x4"


@pytest.mark.slow
def test_the_committed_figures_are_drawn_from_the_committed_results(tmp_path):
    outcomes, errors = make_all.make_all(REPO / "results", tmp_path)
    assert errors == []
    assert {o.figure: o.skipped for o in outcomes if o.skipped} == {}  # every input is committed
    drawn = sorted(p.name for p in tmp_path.glob("*.png"))
    assert drawn == sorted(f"{name}.png" for name in FIGURES)
    assert sorted(p.name for p in COMMITTED.glob("*.png")) == drawn, f"other figures than drawn: {REDRAW}"
    stale = {name: pixel_differences(pixels(COMMITTED / name), pixels(tmp_path / name)) for name in drawn}
    stale = {name: why for name, why in stale.items() if why}
    assert stale == {}, f"committed figures differ from today's drawing of results/: {stale}; redraw: {REDRAW}"
