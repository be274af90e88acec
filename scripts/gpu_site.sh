# Sourced by the GPU scripts: installs the wheelhouse into the site directory $SITE (no
# registry needed), overlays the Python package from this tree (the compiled core comes
# from the wheel), and points PYTHONPATH, PATH and $OUT at it.
rm -rf "$SITE"
python3 -m pip install -q --no-index --no-deps --target "$SITE" wheelhouse/*.whl || exit 1
cp python/tritonad/*.py "$SITE/tritonad/"
export PYTHONPATH="$SITE" PATH="$SITE/bin:$PATH"
OUT="${OUT:-/tmp/tritonad-gpu-logs}"; mkdir -p "$OUT"
