"""The loader a researcher writes with SPDL (Meta's thread-based data loading): a pipeline whose
stage demuxes each clip's time window from the file (`spdl.io.demux_video`), decodes it with
FFmpeg's filter graph doing the RGB conversion and resize (`decode_packets`), and batches, with
as many decoding threads as workers.

Run by `npm run bench` (bench/compare) under the bench's peers environment
(scripts/bench-peers-env.mjs); prints one JSON line, the row's report, last.
usage: spdl_loader.py CLIPS.json --workers N --batch B [--step-ms MS] [--size HxW]
CLIPS.json: as bench/torchcodec_loader.py's.
"""
import time

import spdl.io
import torch
from spdl.pipeline import PipelineBuilder
from training_loop import count, cpu_seconds, drive, emit, loader_args, read_bytes, stack

_rates = {}


def frame_rate(src):
    rate = _rates.get(src)
    if rate is None:
        r = spdl.io.demux_video(src, timestamp=(0, 0.001)).frame_rate
        rate = _rates[src] = r[0] / r[1] if isinstance(r, tuple) else float(r)
    return rate


def main():
    a, items = loader_args(size=True)
    h, w = (int(x) for x in a.size.split("x")) if a.size else (None, None)
    filter_desc = spdl.io.get_video_filter_desc(pix_fmt="rgb24", scale_width=w, scale_height=h, scale_mode=None)

    def load(item):
        src, clip = item["src"], item["clip"]
        fps = frame_rate(src)
        start = clip["startSeconds"]
        # Half a frame of margin either side: the window selects frames by timestamp.
        window = (start - 0.5 / fps, start + (clip["frames"] * clip["stride"] - 0.5) / fps)
        packets = spdl.io.demux_video(src, timestamp=window)
        frames = spdl.io.decode_packets(packets, filter_desc=filter_desc)
        return spdl.io.to_torch(spdl.io.convert_frames(frames))[:: clip["stride"]][: clip["frames"]]

    def collate(clips):
        # A stage of this file: the pipeline reads each stage's source, and this one's is read before the count starts.
        return stack(clips)

    torch.set_num_threads(1)
    # Decoding threads, no worker processes: this process's CPU is the row's.
    cpu0 = cpu_seconds(children=False)
    read0 = read_bytes()
    t0 = time.perf_counter()
    pipeline = (
        PipelineBuilder()
        .add_source(items)
        .pipe(load, concurrency=a.workers, output_order="input")
        .aggregate(a.batch)
        .pipe(collate)
        .add_sink(2)
        .build(num_threads=a.workers)
    )
    counted = {"clips": 0, "frames": 0}

    with pipeline.auto_stop():
        waited, first = drive(iter(pipeline.get_iterator(timeout=300)), t0, a.step_ms / 1000, lambda batch: count(counted, batch))
    end = time.perf_counter()
    emit(t0, waited, first, end=end, **counted, bytesFetched=read_bytes() - read0, cpuSeconds=cpu_seconds(children=False) - cpu0, device="cpu")


if __name__ == "__main__":
    main()
