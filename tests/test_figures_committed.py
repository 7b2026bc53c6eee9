"""The committed figures (paper_figures/figures/) are the ones today's scripts draw from the committed results/:
a figure left stale after a republication, or a script changed without redrawing, fails here naming the figure.

PNGs are compared decoded, with matplotlib's own ``compare_images`` at tolerance 0 (every pixel equal): the
drawing is what must not drift, and pixels do not depend on the PNG encoder's zlib. (With the pinned matplotlib,
fontTools and Pillow, the PNG and PDF bytes match too, here and under other OpenBLAS and NumPy CPU dispatch:
the closing note of issue 34.)"""

from __future__ import annotations

import shutil

import pytest
from matplotlib.testing.compare import compare_images
from PIL import Image

from .figure_fixtures import FIGURES, REPO, make_all

COMMITTED = REPO / "paper_figures" / "figures"
pytestmark = pytest.mark.slow  # every test here needs the figures drawn (the module fixture)

REDRAW = "redraw with `make figures` (paper_figures/make_all.py) and commit paper_figures/figures/"


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """Every figure, drawn once from the committed results/ (about 12 s)."""
    out = tmp_path_factory.mktemp("drawn")
    outcomes, errors = make_all.make_all(REPO / "results", out)
    assert errors == []
    assert {o.figure: o.skipped for o in outcomes if o.skipped} == {}  # every input is committed
    return out


def test_the_committed_figures_are_the_ones_drawn(drawn):
    names = sorted(f"{name}.png" for name in FIGURES)
    assert sorted(p.name for p in drawn.glob("*.png")) == names
    assert sorted(p.name for p in COMMITTED.glob("*.png")) == names, REDRAW


@pytest.mark.parametrize("name", FIGURES)
def test_committed_figure_is_todays_drawing_of_the_committed_results(drawn, name):
    diff = compare_images(str(COMMITTED / f"{name}.png"), str(drawn / f"{name}.png"), tol=0)
    assert diff is None, f"{name}: committed figure differs from today's drawing of results/; {REDRAW}\n{diff}"


def test_one_pixel_changed_is_a_difference(drawn, tmp_path):
    """The comparison above can fail: tolerance 0 sees one pixel."""
    moved = tmp_path / "fig_seeds.png"
    shutil.copy(drawn / "fig_seeds.png", moved)
    assert compare_images(str(COMMITTED / "fig_seeds.png"), str(moved), tol=0) is None
    with Image.open(moved) as im:
        im = im.convert("RGBA")
    im.putpixel((100, 100), (1, 2, 3, 255))
    im.save(moved)
    assert "did not match" in compare_images(str(COMMITTED / "fig_seeds.png"), str(moved), tol=0)
