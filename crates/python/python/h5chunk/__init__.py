"""h5chunk: HDF5 files through a pure-Rust engine, with h5py's File/Group/Dataset surface.

The classes live in the compiled module `h5chunk._h5chunk`; this package re-exports them and
holds the xarray backend (`xr.open_dataset(path, engine="h5chunk")`).
"""

from ._h5chunk import (  # noqa: F401
    AttributeManager,
    Dataset,
    ExternalLink,
    File,
    Group,
    HardLink,
    SoftLink,
    StoreInfo,
    UnsupportedError,
    View,
    __version__,
)

__all__ = [
    "AttributeManager",
    "Dataset",
    "ExternalLink",
    "File",
    "Group",
    "HardLink",
    "SoftLink",
    "StoreInfo",
    "UnsupportedError",
    "View",
    "__version__",
]
