"""The teaching notebooks (docs/notebooks/) run top to bottom without an error, in bounded time, so they
cannot rot. The executed copies are written beside the build (FRICTION_NOTEBOOK_OUT, if set) for reading."""
import glob
import os
import time

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "docs", "notebooks", "*.ipynb")))


def test_there_are_at_least_three():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    start = time.perf_counter()
    NotebookClient(nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    print(f"{os.path.basename(path)}: {time.perf_counter() - start:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    # Every code cell produced something a reader sees (no silently empty figures or tables).
    assert all(c.outputs for c in nb.cells if c.cell_type == "code" and not c.source.startswith("import"))
    out = os.environ.get("FRICTION_NOTEBOOK_OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        nbformat.write(nb, os.path.join(out, os.path.basename(path)))
