#!/usr/bin/python3
"""The loader a researcher writes today: a PyTorch DataLoader with one worker per core whose
workers open each clip's signed URL with PyAV, seek to the clip and decode it to RGB.

Run by `npm run bench` (bench/compare); prints one JSON line, the row's report, last.
usage: torch_loader.py CLIPS.json --workers N --batch B [--step-ms MS]
CLIPS.json: [{"url": ..., "clip": {"key", "start", "startSeconds", "frames", "stride"}}]
"""
import time

import av
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from training_loop import count, cpu_seconds, drive, emit, loader_args, stack


class ClipDataset(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        url = self.items[i]["url"]
        clip = self.items[i]["clip"]
        frames, stride, start = clip["frames"], clip["stride"], clip["startSeconds"]
        # ffmpeg does not verify TLS peers by default either; the bench's WAN uses a self-signed cert.
        with av.open(url, options={"tls_verify": "0"}) as container:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            # Seek lands on the keyframe at or before the clip; frames before its start are dropped.
            container.seek(int(start / stream.time_base), stream=stream, backward=True)
            out = []
            index = 0
            eps = 0.5 / float(stream.average_rate or 25)
            for frame in container.decode(stream):
                if frame.time is not None and frame.time < start - eps:
                    continue
                if index % stride == 0:
                    out.append(frame.to_ndarray(format="rgb24"))
                    if len(out) == frames:
                        break
                index += 1
        return torch.from_numpy(np.stack(out))


def main():
    a, items = loader_args()
    torch.set_num_threads(1)
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    loader = DataLoader(ClipDataset(items), batch_size=a.batch, num_workers=a.workers, collate_fn=stack)
    counted = {"clips": 0, "frames": 0}

    it = iter(loader)
    waited, first = drive(it, t0, a.step_ms / 1000, lambda batch: count(counted, batch))
    del it  # joins the workers, so their CPU time counts as the children's
    emit(t0, waited, first, **counted, cpuSeconds=cpu_seconds() - cpu0, device="cpu")


if __name__ == "__main__":
    main()
