"""The rank program of tests/multigpu/test_distributed.py (run by torchrun).

Every rank builds the same seeded problem, takes its shard of rows / blocks,
runs the TMA copy and the cluster exchange on it on its own GPU (torch's
current stream), and all-gathers the results; rank 0 compares them with the
whole expected result and writes the counts to ``argv[1]``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from numba import cuda

import numba_asynccopy as ac
from numba_asynccopy.examples import exchange as ex
from numba_asynccopy.examples import tma_copy as tc

ROWS, COLS, BOX, STAGES = 96, 132, (32, 64), 4   # per rank
BLOCKS, ROUNDS = 8, 3                             # per rank


def main(out_path: str) -> None:
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    cuda.select_device(local)       # Numba's current device, for compiling and launching
    stream = torch.cuda.current_stream()

    g = np.random.default_rng(1234)  # the same whole problem on every rank
    words = g.integers(0, 2**31 - 1, (world * ROWS, COLS), dtype=np.int32)
    tiles = g.standard_normal((world * BLOCKS, ex.TILE)).astype(np.float32)

    src = torch.from_numpy(words[rank * ROWS:(rank + 1) * ROWS]).cuda()
    dst = torch.full_like(src, -1)
    copy = cuda.jit(tc.SIGNATURE)(tc.make_tma_copy(STAGES, BOX))
    smap, dmap = ac.TensorMap(src, BOX), ac.TensorMap(dst, BOX)
    ac.launch(copy, grid=3, block=tc.BLOCK, args=(smap, dmap, ROWS, COLS), stream=stream)

    a = torch.from_numpy(tiles[rank * BLOCKS:(rank + 1) * BLOCKS]).cuda()
    out = torch.empty_like(a)
    exchange = cuda.jit(ex.DSMEM_SIGNATURE)(ex.exchange_dsmem)
    ac.launch(exchange, grid=BLOCKS, block=ex.BLOCK, args=(a, out, ROUNDS), cluster=ex.CLUSTER,
              stream=stream)

    # NCCL runs on torch's current stream: ordered after both launches
    copies = [torch.empty_like(dst) for _ in range(world)]
    dist.all_gather(copies, dst)
    exchanged = [torch.empty_like(out) for _ in range(world)]
    dist.all_gather(exchanged, out)
    devices = [torch.zeros(1, dtype=torch.int64, device="cuda") for _ in range(world)]
    dist.all_gather(devices, torch.tensor([smap.device_id], device="cuda"))
    if rank == 0:
        got_words = torch.cat(copies).cpu().numpy()
        got_tiles = torch.cat(exchanged).cpu().numpy()
        report = {
            "world": world,
            "devices": [int(d.item()) for d in devices],
            "tma_rows": int(got_words.shape[0]),
            "tma_mismatches": int(np.count_nonzero(got_words != words)),
            "exchange_blocks": int(got_tiles.shape[0]),
            "exchange_mismatches": int(np.count_nonzero(got_tiles != ex.expected(tiles, ROUNDS))),
        }
        with open(out_path, "w") as f:
            json.dump(report, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
