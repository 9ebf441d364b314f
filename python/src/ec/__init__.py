"""ec: stream raw video, images and arrays from an object bucket into a PyTorch training loop.

Three lines::

    import ec
    ds = ec.open("http://127.0.0.1:8787/v1/datasets/gameplay", frames=16, size=(224, 224), batch=8)
    for batch in ds: train(batch.frames, batch.clips)

The ec engine (Node.js, the ``ec`` command) fetches, decodes and batches; this package starts it,
maps its shared-memory batches as tensors and checkpoints. ``ec.torch.ClipDataset`` wraps it for
``torch.utils.data.DataLoader``. The API reference is docs/python.md.
"""

from ._dataset import Batch, Dataset, merge_checkpoints, open
from ._errors import Error, InvalidOptionError, InvalidOptionTypeError
from ._types import Clip, ClipSource, ErrorClip

__all__ = [
    "open",
    "merge_checkpoints",
    "Dataset",
    "Batch",
    "Clip",
    "ClipSource",
    "ErrorClip",
    "Error",
    "InvalidOptionError",
    "InvalidOptionTypeError",
]
__version__ = "0.1.0"
