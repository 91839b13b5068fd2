"""The seed's Python training loop, with the same two fixes as the C++ one.

The seed declared fc1 as 32*5*5 (28x28 inputs give 32*12*12 features) and fed
log_softmax output to CrossEntropyLoss (a softmax twice); here fc1 takes
32*12*12 and the loss is NLL on log-probabilities. Everything else is the
seed's: SGD lr 0.01 momentum 0.5 (torch.optim.SGD as the seed made it),
zero_grad(), batch 64, normalization 0.1307/0.3081. Like build/train, the
whole dataset sits in tensors on the device and batches are cut there, so
the two time the same work. --compile trains through
torch.compile(model, mode="reduce-overhead") (CUDA graphs on a GPU), a short
last batch and the evaluation through the eager model, as build/train
--cuda-graph does. Run it with the project's venv:
    ~/.cache/cudabench/venv/bin/python scripts/train_mnist.py --epochs 1
"""
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..base.errors import BadInput
from ..base.files import refuse_inputs_as_outputs, write_whole
from ..base.cli import ArgParser


DEBIAN_FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3)
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.dropout1 = nn.Dropout2d(0.25)
        self.fc1 = nn.Linear(32 * 12 * 12, 128)  # the seed's 32*5*5 cannot run on 28x28
        self.dropout2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def bad(msg):
    """Bad input: one line, exit 2."""
    print(f"train_mnist: {msg}", file=sys.stderr)
    sys.exit(2)


def read_idx(path, magic):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        bad(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})")
    if len(data) < (16 if magic == 0x803 else 8):
        bad(f"{path}: too short for an IDX header ({len(data)} bytes)")
    got, n = struct.unpack(">II", data[:8])
    if got != magic:
        bad(f"{path}: bad magic 0x{got:08X} (expected 0x{magic:08X})")
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        arr = np.frombuffer(data, np.uint8, offset=16)
        if arr.size != n * rows * cols:
            bad(f"{path}: truncated or overlong ({arr.size} pixels, header says {n * rows * cols})")
        return arr.reshape(n, 1, rows, cols)
    arr = np.frombuffer(data, np.uint8, offset=8)
    if arr.size != n:
        bad(f"{path}: truncated or overlong ({arr.size} labels, header says {n})")
    return arr


def find(dirname, base):
    for suffix in ("", ".gz"):
        p = os.path.join(dirname, base + suffix)
        if os.path.exists(p):
            return p
    bad(f"{os.path.join(dirname, base)}: missing (nor .gz)")


def load(dirname, prefix, device, limit):
    x = read_idx(find(dirname, f"{prefix}-images-idx3-ubyte"), 0x803)
    y = read_idx(find(dirname, f"{prefix}-labels-idx1-ubyte"), 0x801)
    if limit >= 0:
        x, y = x[:limit], y[:limit]
    x = torch.from_numpy(x.copy()).to(device).float().div_(255).sub_(0.1307).div_(0.3081)
    return x, torch.from_numpy(y.astype(np.int64)).to(device)


def main():
    ap = ArgParser(prog="train_mnist", description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--limit", type=int, default=-1)
    ap.add_argument("--data-dir", default=os.environ.get("CUDABENCH_DATA_DIR") or DEBIAN_FASHION_MNIST)
    ap.add_argument("--json", help="write a JSON summary here")
    ap.add_argument("--compile", action="store_true",
                    help='train through torch.compile(model, mode="reduce-overhead")')
    a = ap.parse_args()
    if a.json:  # never over the data it reads (by name or a link), nor over this program
        data = [os.path.join(a.data_dir, n) for n in (os.listdir(a.data_dir) if os.path.isdir(a.data_dir) else [])]
        try:
            refuse_inputs_as_outputs([("--json", a.json)], data)
        except BadInput as e:
            bad(str(e))
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data_dir, "train", dev, a.limit)
    xte, yte = load(a.data_dir, "t10k", dev, -1)
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    # Whole batches through the compiled model; it shares the eager one's parameters.
    whole = torch.compile(model, mode="reduce-overhead") if a.compile else model
    n = xtr.shape[0]
    print(f"train_mnist.py: {n} training images on {dev} ({torch.get_num_threads()} CPU threads), torch {torch.__version__}"
          + (", compiled (reduce-overhead)" if a.compile else ""))
    epochs = []
    for epoch in range(1, a.epochs + 1):
        model.train()
        gen = torch.Generator().manual_seed(a.seed * 1000003 + epoch)
        perm = torch.randperm(n, generator=gen).to(dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        total = torch.zeros((), device=dev)
        batches = 0
        for s in range(0, n, a.batch_size):
            idx = perm[s:s + a.batch_size]
            opt.zero_grad()
            loss = F.nll_loss((whole if idx.shape[0] == a.batch_size else model)(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.detach()
            batches += 1
        if dev.type == "cuda":
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            correct, tl = 0, 0.0
            for s in range(0, xte.shape[0], 1000):
                out = model(xte[s:s + 1000])
                tl += F.nll_loss(out, yte[s:s + 1000], reduction="sum").item()
                correct += (out.argmax(1) == yte[s:s + 1000]).sum().item()
        acc = correct / xte.shape[0]
        e = {"epoch": epoch, "train_loss": total.item() / batches, "test_loss": tl / xte.shape[0],
             "test_accuracy": acc, "seconds": secs, "images_per_second": n / secs}
        epochs.append(e)
        print(f"epoch {epoch}/{a.epochs}  train loss {e['train_loss']:.4f}  test loss {e['test_loss']:.4f}  "
              f"test acc {100 * acc:.2f}%  {secs:.2f} s  {n / secs:.0f} img/s", flush=True)
    if a.json:
        write_whole(a.json, json.dumps({"device": str(dev), "torch": torch.__version__, "compiled": a.compile,
                                        "per_epoch": epochs, "final_test_accuracy": epochs[-1]["test_accuracy"]},
                                       indent=2))


def entry():
    """The program, as scripts/train_mnist.py runs it: its exit code."""
    try:
        main()
        return 0
    except KeyboardInterrupt:
        print("train_mnist: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # one line, never a traceback; 3, never 1
        print(f"train_mnist: stopped: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(entry())
