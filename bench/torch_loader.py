#!/usr/bin/python3
"""The loader a researcher writes today: a PyTorch DataLoader with one worker per core whose
workers open each clip's signed URL with PyAV, seek to the clip and decode it to RGB.

Run by `npm run bench` (bench/compare); prints one JSON line, the row's report, last.
usage: torch_loader.py CLIPS.json --workers N --batch B [--step-ms MS]
CLIPS.json: [{"url": ..., "clip": {"key", "start", "startSeconds", "frames", "stride"}}]
"""
import argparse
import json
import resource
import time

import av
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from training_loop import drive, emit


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


def collate(clips):
    # Videos of different sizes cannot share a tensor; hand those over as a list.
    if all(c.shape == clips[0].shape for c in clips):
        return torch.stack(clips)
    return clips


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main():
    p = argparse.ArgumentParser()
    p.add_argument("clips")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--step-ms", type=float, default=0)
    a = p.parse_args()
    with open(a.clips) as f:
        items = json.load(f)
    torch.set_num_threads(1)
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    loader = DataLoader(ClipDataset(items), batch_size=a.batch, num_workers=a.workers, collate_fn=collate)
    counted = {"clips": 0, "frames": 0}

    def take(batch):
        for clip in batch:
            counted["clips"] += 1
            counted["frames"] += int(clip.shape[0])

    it = iter(loader)
    waited, first = drive(it, t0, a.step_ms / 1000, take)
    del it  # joins the workers, so their CPU time counts as the children's
    emit(t0, waited, first, **counted, cpuSeconds=cpu_seconds() - cpu0, device="cpu")


if __name__ == "__main__":
    main()
