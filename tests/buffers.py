"""Host buffers laid out as PJRT would alias them (tests of copy-on-ingest)."""

import numpy as np


def aligned(values: np.ndarray) -> np.ndarray:
    """A copy of ``values`` at a 64-byte aligned address: what PJRT aliases on CPU."""
    raw = np.empty(values.nbytes + 64, np.uint8)
    offset = -raw.ctypes.data % 64
    out = raw[offset:offset + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out
