"""Every notebook in notebooks/ runs top to bottom without a cell error.

Each notebook is executed by nbclient in a fresh ``python3`` kernel, on a copy
in a temporary folder, so neither its stored outputs nor any file it writes
touch the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip(
    "nbformat", reason="nbformat and nbclient come with the test extra, not test-core")
from nbclient import NotebookClient  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_without_errors(path: Path, tmp_path: Path):
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    nb = nbformat.read(copy, as_version=4)
    nbformat.validate(nb)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, quoting the cell, on the first error
    if path.name == "03_introspection.ipynb":
        _check_introspection_outputs(nb)


def _check_introspection_outputs(nb) -> None:
    """The introspection notebook shows what it says: Jupyter cell names, derivative
    attribution, the rich HTML, and graphs (drawn where Graphviz is installed)."""
    texts, html = [], []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            data = out.get("data", {})
            texts.append(data.get("text/plain", ""))
            html.append(data.get("text/html", ""))
    text, page = "\n".join(texts), "\n".join(html)
    assert "], line 3" in text and "grad of In [" in text and "params[0]['weight']" in text
    assert "<details" in page and "Cost by Python source line" in page
    assert "Measured time by Python source line" in page and "of the time" in text
    assert "before and after" in page and "digraph" in text + page
    if shutil.which("dot"):
        assert "<svg" in page
