import sys, os, re
sys.path.insert(0, "benchmarks")
import torch, triton
import matmul as M
import bench
n = 2048
a = torch.randn(n, n, device="cuda", dtype=torch.float16); b = torch.randn_like(a); c = torch.empty_like(a); dc = torch.randn_like(a)
meta = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8)
grid = (triton.cdiv(n, 128) ** 2,)
da, db = torch.zeros_like(a), torch.zeros_like(b)
k = M.matmul_bwd[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), da, db, dc, **meta, num_warps=8, num_stages=3)
f = bench.matmul_fwd[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **meta, num_warps=8, num_stages=3)
out = os.environ.get("OUT", "/tmp")
for name, kk in (("bwd", k), ("fwd", f)):
    ttgir = kk.asm["ttgir"]
    open(f"{out}/{name}.ttgir", "w").write(ttgir)
    open(f"{out}/{name}.ptx", "w").write(kk.asm["ptx"])
    for pat in ["warp_group_dot", "ttng.warp_group_dot_wait", "async_copy_global_to_local", "ttg.local_alloc", "scf.for", "tt.load", "ttng.async_tma", "divsi", "remsi"]:
        print(name, pat, ttgir.count(pat))
    print(name, "regs", kk.n_regs, "spills", kk.n_spills, "shared", kk.metadata.shared)
