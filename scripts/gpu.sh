#!/usr/bin/env bash
# The one GPU run of this project.
#   scripts/gpu.sh wheel   (here)        builds a cp312 wheel of tritonad and the pure-Python
#                                        test dependencies (pytest; the peer suite's
#                                        liger-kernel, fla-core, einops) into wheelhouse/
#   scripts/gpu.sh run     (GPU machine) installs them into /tmp/tritonad-site (no registry
#                                        needed) and runs the GPU tests, the demo and the
#                                        results page (benchmarks/results.py --quick), in one go
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  wheel)
    PY312="${PY312:-$HOME/.pyenv/versions/3.12.1/bin/python}"
    rm -rf wheelhouse && mkdir -p wheelhouse
    "$PY312" -m pip wheel . --no-deps -w wheelhouse
    "$PY312" -m pip download pytest -d wheelhouse --only-binary :all: --python-version 3.12
    # test/peer: pure-Python libraries (their torch and triton are the machine's own)
    "$PY312" -m pip download --no-deps liger-kernel==0.8.5 fla-core==0.6.0 einops \
      -d wheelhouse --only-binary :all: --python-version 3.12
    ls -la wheelhouse
    ;;
  run)
    SITE=/tmp/tritonad-site
    rm -rf "$SITE"
    python3 -m pip install --no-index --no-deps --target "$SITE" wheelhouse/*.whl >/dev/null
    if [ -n "${OVERLAY_PY:-}" ]; then
      # Iterate on the Python side without a new wheel: the compiled core comes
      # from the wheel, the Python package from this working tree.
      cp python/tritonad/*.py "$SITE/tritonad/"
    fi
    export PYTHONPATH="$SITE" PATH="$SITE/bin:$PATH"
    nvidia-smi --query-gpu=name --format=csv,noheader || true
    python3 -c "import tritonad, triton, torch; print('tritonad', tritonad.__version__, 'triton', triton.__version__, 'torch', torch.__version__)"
    LOGS="${OUT:-/tmp/tritonad-gpu-logs}"; mkdir -p "$LOGS"
    status=0
    # (the peer suite writes its table: kernel, dtype, errors, status, schedule)
    TRITONAD_PEER_TABLE="$LOGS/peer.md" \
      python3 -m pytest test -m gpu -q -rfEsx -p no:cacheprovider ${PYTEST_ARGS:-} \
      > "$LOGS/pytest.log" 2>&1 || status=$?
    tail -n 40 "$LOGS/pytest.log"
    python3 -m tritonad.demo > "$LOGS/demo.log" 2>&1 || status=$?
    head -n 8 "$LOGS/demo.log"
    if [ -z "${SKIP_BENCH:-}" ]; then
      # (the results page, every section at small sizes; copy it into benchmarks/ to commit)
      python3 benchmarks/results.py --quick --out "$LOGS/RESULTS.md" > "$LOGS/bench.log" 2>&1 \
        || status=$?
      tail -n 40 "$LOGS/bench.log"
    fi
    echo "gpu run exit status: $status"
    exit $status
    ;;
  *)
    echo "usage: $0 wheel|run" >&2; exit 2 ;;
esac
