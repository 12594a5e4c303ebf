from ._h5chunk import (
    AttributeManager as AttributeManager,
    Dataset as Dataset,
    ExternalLink as ExternalLink,
    File as File,
    Group as Group,
    HardLink as HardLink,
    SoftLink as SoftLink,
    StoreInfo as StoreInfo,
    UnsupportedError as UnsupportedError,
    View as View,
    __version__ as __version__,
)
