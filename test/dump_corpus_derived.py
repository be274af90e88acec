"""Writes the derived backward TTIR and schedule (or the error that refused it) of every
corpus kernel (and the records the launch path reads), in the default and the
deterministic mode, derived on the CPU: two builds
of the core are compared with `diff -r` on their outputs (with test/fuzz/run.py
--cpu-only --dump-derived for the generated kernels).

    PYTHONPATH=python python3 test/dump_corpus_derived.py OUTDIR
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tritonad  # noqa: E402
from compile_util import comparable_dump, compile_on_cpu  # noqa: E402
from corpus.kernels import CORPUS  # noqa: E402

MODES = {"default": {}, "deterministic": {"mode": "deterministic"}}


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    for entry in CORPUS:
        for mode, options in MODES.items():
            stem = os.path.join(outdir, f"{entry.name}.{mode}")
            try:
                bwd = tritonad.grad(entry.fn, **options)
                compiled = compile_on_cpu(bwd, entry.signature, entry.constexprs)
            except Exception as e:  # noqa: BLE001  (a refusal is part of the behaviour)
                with open(stem + ".error", "w") as f:
                    f.write(f"{type(e).__name__}: {e}\n")
                print(entry.name, mode, "error", type(e).__name__, flush=True)
                continue
            records = {k: v for k, v in compiled.metadata._asdict().items()
                       if k.startswith("tritonad")}
            for suffix, text in ((".ttir", bwd.derived_ir()),
                                 (".schedule", str(bwd.schedule()) + "\n"),
                                 (".records",
                                  json.dumps(records, indent=1, sort_keys=True, default=str))):
                with open(stem + suffix, "w") as f:
                    f.write(comparable_dump(text))
            print(entry.name, mode, "derived", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
