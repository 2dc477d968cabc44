import os
import tempfile

import pytest


@pytest.fixture
def tmp_dir():
    """A fresh directory under NKIGRAPH_TEST_TMP (ctest sets it inside the
    build directory), else under the system's temporary directory."""
    root = os.environ.get("NKIGRAPH_TEST_TMP")
    if root:
        os.makedirs(root, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as path:
        yield path
