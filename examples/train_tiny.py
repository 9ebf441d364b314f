#!/usr/bin/env python3
"""Trains a tiny video model for a few steps on batches streamed by ec.

    python3 examples/train_tiny.py [DATASET_URL_OR_FOLDER] [--steps N]

Without a dataset it makes four short sample videos with ffmpeg (as `npm start` does) and
streams them from their folder; give it `http://127.0.0.1:8787/v1/datasets/PREFIX` (with
EC_TOKEN set) to stream through a local edge instead. Needs the ec wheel with torch (`pip install
"ec-*.whl[torch]"`), or `pip install ./python`, torch and the ec engine (`ec` on PATH or EC_ENGINE).
"""

import argparse
import os
import subprocess
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader

import ec
import ec.torch


def sample_videos(folder: str) -> str:
    sources = ["testsrc2", "mandelbrot", "testsrc2", "mandelbrot"]
    for i, src in enumerate(sources):
        subprocess.run(
            ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"{src}=size=320x180:rate=25",
             "-frames:v", "100", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-pix_fmt", "yuv420p",
             os.path.join(folder, f"sample{i}.mp4")],
            check=True,
        )
    return folder


class TinyVideoNet(nn.Module):
    """Predicts the next frame's mean colour from a clip: enough to show gradients flowing."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(3, 8, kernel_size=3, stride=(1, 2, 2), padding=1), nn.ReLU(),
            nn.Conv3d(8, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(16, 3),
        )

    def forward(self, clips: torch.Tensor) -> torch.Tensor:
        return self.net(clips)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dataset", nargs="?")
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    url = a.dataset or sample_videos(tempfile.mkdtemp(prefix="ec-samples-"))

    # The three lines: ec's batches as uint8 tensors [B, T, H, W, 3], already batched.
    ds = ec.torch.ClipDataset(url, frames=8, size=(64, 64), batch=4, align="exact", seed=0)
    loader = DataLoader(ds, batch_size=None, num_workers=0)

    model = TinyVideoNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for epoch in range(100):
        ds.set_epoch(epoch)
        for batch in loader:
            x = batch.frames.permute(0, 4, 1, 2, 3).float().div_(255)  # [B, 3, T, H, W]
            inputs, target = x[:, :, :-1], x[:, :, -1].mean(dim=(2, 3))
            loss = nn.functional.mse_loss(model(inputs), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            keys = ", ".join(f"{c['key']}@{c['start']}" for c in batch.clips)
            print(f"step {step} epoch {epoch} loss {loss.item():.5f} clips {keys}", flush=True)
            if step == a.steps:
                print(f"checkpoint: {ds.state_dict()['checkpoint']['count']} clips consumed")
                return


if __name__ == "__main__":
    main()
