# Sourced by this directory's scripts (repository root, an H200; wheels it
# lacks in .whl/): $OUT, the wheels on PYTHONPATH, the twins in /tmp/tw.
OUT=${OUT:-gpu-out}; mkdir -p $OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
B=numba_asynccopy/bench; mkdir -p /tmp/tw
[ -f /tmp/tw/twins.so ] || nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -lineinfo -gencode=arch=compute_90a,code=sm_90a \
    -o /tmp/tw/twins.so $B/twins.cu $B/twins_bulk.cu $B/twins_idioms.cu $B/twins_mma.cu $B/twins_hgemm.cu $B/twins_conv.cu > /tmp/tw/b.log 2>&1
