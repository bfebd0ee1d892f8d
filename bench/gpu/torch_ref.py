#!/usr/bin/env python3
"""PyTorch fp32 references for bench/gpu/run_device.sh, on the same GPU, TF32 off.

  gemm N...   torch.matmul fp32 TFLOP/s (the measured fp32 peak reference)
  resnet18 B  ResNet-18 224x224 forward, BN folded into conv (the graph an ONNX export runs,
              the same one ptq_vulkan_bench builds), eval, cudnn.benchmark on: ms per batch,
              with the input already on the GPU and with the host-to-device copy included
One JSON object per line.
"""
import json
import sys
import time

import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2], times[0]


def gemm(n):
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    reps = max(2, min(50, (8 << 30) // (n * n * n) + 2))

    def run():
        for _ in range(reps):
            torch.matmul(a, b)

    _, best = timed(run, 3)
    print(json.dumps({"bench": "torch_gemm", "n": n, "reps": reps, "seconds": best,
                      "tflops": 2.0 * n * n * n * reps / best / 1e12}), flush=True)


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1)
        self.down = nn.Conv2d(cin, cout, 1, stride, 0) if stride != 1 or cin != cout else None

    def forward(self, x):
        y = self.c2(torch.relu(self.c1(x)))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 7, 2, 3)
        layers, c = [], 64
        for cout in (64, 128, 256, 512):
            layers += [Block(c, cout, 1 if cout == 64 else 2), Block(cout, cout, 1)]
            c = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet18(batch):
    model = ResNet18().to(dev).eval()
    host = torch.randn(batch, 3, 224, 224).pin_memory()
    x = host.to(dev)
    with torch.no_grad():
        med, best = timed(lambda: model(x), 20)
        med_h2d, best_h2d = timed(lambda: model(host.to(dev, non_blocking=True)).cpu(), 20)
    print(json.dumps({"bench": "torch_resnet18", "batch": batch, "median_ms": med * 1e3,
                      "best_ms": best * 1e3, "median_ms_with_copies": med_h2d * 1e3,
                      "best_ms_with_copies": best_h2d * 1e3}), flush=True)


def main():
    args = sys.argv[1:]
    print(json.dumps({"bench": "torch_device", "name": torch.cuda.get_device_name(0),
                      "torch": torch.__version__}), flush=True)
    i = 0
    while i < len(args):
        if args[i] == "gemm":
            i += 1
            while i < len(args) and args[i].isdigit():
                gemm(int(args[i]))
                i += 1
            continue
        if args[i] == "resnet18":
            resnet18(int(args[i + 1]))
            i += 2
            continue
        i += 1


if __name__ == "__main__":
    main()
