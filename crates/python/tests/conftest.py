"""pytest set-up for h5chunk's Python module: h5py is the oracle of every test."""

import pytest

h5py = pytest.importorskip("h5py")
