"""The loader a researcher writes with torchcodec: a map-style Dataset of clips whose
`__getitem__` asks a VideoDecoder (exact seek mode, one per video and worker, kept open) for the
clip's frames with `get_frames_at`, in a PyTorch DataLoader with one worker per core. A local
path opens the file; a URL opens a file-like object from fsspec's HTTP file system, as
torchcodec documents for remote files.

Run by `npm run bench` (bench/compare) under the bench's peers environment
(scripts/bench-peers-env.mjs); prints one JSON line, the row's report, last.
usage: torchcodec_loader.py CLIPS.json --workers N (0: decode in this process) --batch B [--step-ms MS] [--size HxW]
CLIPS.json: [{"src": path or URL, "clip": {"key", "start", "startSeconds", "frames", "stride"}}],
in the order the loader reads them (the bench sorts them for the file-order row).
"""
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torchcodec.decoders import VideoDecoder
from torchcodec.transforms import Resize
from training_loop import count, cpu_seconds, drive, emit, loader_args, read_bytes, stack


class ClipDataset(Dataset):
    def __init__(self, items, size=None):
        self.items = items
        self.size = size
        self.decoders = {}  # per worker process: each forked worker opens its own
        self.read = None

    def __len__(self):
        return len(self.items)

    def decoder(self, src):
        d = self.decoders.get(src)
        if d is None:
            source = src
            if src.startswith(("https://", "http://")):
                import fsspec

                source = fsspec.open(src, "rb").open()
            transforms = [Resize(self.size)] if self.size else None
            d = VideoDecoder(source, seek_mode="exact", dimension_order="NHWC", transforms=transforms)
            self.decoders[src] = d
        return d

    def __getitem__(self, i):
        src, clip = self.items[i]["src"], self.items[i]["clip"]
        if self.read is None:
            self.read = read_bytes()
        indices = [clip["start"] + k * clip["stride"] for k in range(clip["frames"])]
        frames = self.decoder(src).get_frames_at(indices).data
        # The bytes this worker read for the clip (a forked worker's reads reach the parent's
        # accounting only when it exits), handed over with it; the bench's own count, not a user's.
        now = read_bytes()
        read, self.read = now - self.read, now
        return frames, read


def collate(items):
    return stack([c for c, _ in items]), sum(r for _, r in items)


def main():
    a, items = loader_args(size=True, size_help="HxW to resize to (torchcodec's decoder transform)")
    size = tuple(int(x) for x in a.size.split("x")) if a.size else None
    torch.set_num_threads(1)
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    loader = DataLoader(ClipDataset(items, size), batch_size=a.batch, num_workers=a.workers, collate_fn=collate)
    counted = {"clips": 0, "frames": 0, "bytesFetched": 0}

    def take(batch):
        clips, read = batch
        counted["bytesFetched"] += read
        count(counted, clips)

    it = iter(loader)
    waited, first = drive(it, t0, a.step_ms / 1000, take)
    end = time.perf_counter()
    del it  # joins the workers, so their CPU time counts as the children's
    emit(t0, waited, first, end=end, **counted, cpuSeconds=cpu_seconds() - cpu0, device="cpu")


if __name__ == "__main__":
    main()
