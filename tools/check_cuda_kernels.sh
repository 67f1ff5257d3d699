#!/usr/bin/env bash
# Type-check every CUDA kernel family with nvcc, for sm_80 and sm_90, with
# every template instantiated (-DGPUSPARSE_INSTANTIATE_ALL) and warnings as
# errors; then assemble each PTX file with ptxas -v and print every kernel
# instantiation's registers, static shared memory, spills, stack frame and
# theoretical occupancy, checked against tools/kernel_budgets.json
# (tools/kernel_resources.py). Needs no GPU, only nvcc and python3.
#
#   tools/check_cuda_kernels.sh            # from anywhere
#   NVCC=/path/to/nvcc JOBS=4 tools/check_cuda_kernels.sh
#   RESOURCES=0 tools/check_cuda_kernels.sh      # compile check only, no ptxas
#   RESOURCES_ARGS=--hot-only tools/check_cuda_kernels.sh   # table of the budgeted kernels only
#
# Exits 0 with a notice when nvcc is absent; non-zero when any compile fails
# or a kernel breaks its resource budget.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kernels="$root/cuda_kernels"
nvcc="${NVCC:-nvcc}"
jobs="${JOBS:-2}"
archs="${ARCHS:-80 90}"
resources="${RESOURCES:-1}"
python="${PYTHON:-python3}"
ptxas="${PTXAS:-$(dirname "$(command -v "$nvcc" 2>/dev/null || echo .)")/ptxas}"

if ! command -v "$nvcc" >/dev/null 2>&1; then
    echo "check_cuda_kernels: nvcc not found; skipping the CUDA kernel compile check" >&2
    exit 0
fi

shopt -s nullglob
# Largest first, so the long compiles (many instantiations) start early.
mapfile -t sources < <(ls -S "$kernels"/*.cu 2>/dev/null)
if [ "${#sources[@]}" -eq 0 ]; then
    echo "check_cuda_kernels: no .cu files under $kernels" >&2
    exit 1
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# One job per (file, arch); each prints one line and fails on any warning.
jobs_list=()
for src in "${sources[@]}"; do
    for arch in $archs; do
        jobs_list+=("$src" "$arch")
    done
done

if [ "$resources" != 0 ] && ! [ -x "$ptxas" ]; then
    echo "check_cuda_kernels: ptxas not found beside nvcc (set PTXAS=...)" >&2
    exit 1
fi

# The PTX compile (front end, warnings as errors) and, unless RESOURCES=0,
# ptxas -v on that PTX for the same arch: the resource figures ptxas reports
# while generating the machine code (no output file is kept).
export nvcc ptxas kernels out resources
printf '%s\0%s\0' "${jobs_list[@]}" | xargs -0 -n 2 -P "$jobs" bash -c '
    src="$1"; arch="$2"; name="$(basename "$src" .cu)"
    log="$out/$name.sm_$arch.log"
    ptx="$out/$name.sm_$arch.ptx"
    if ! "$nvcc" -DGPUSPARSE_INSTANTIATE_ALL --ptx -arch="sm_$arch" -std=c++17 \
        -I "$kernels" -Werror all-warnings "$src" -o "$ptx" >"$log" 2>&1; then
        echo "FAIL  $name.cu sm_$arch"
        cat "$log"
        exit 255
    fi
    if [ "$resources" != 0 ] && ! "$ptxas" -v -arch="sm_$arch" "$ptx" -o /dev/null \
        >"$out/$name.sm_$arch.ptxas.log" 2>&1; then
        echo "FAIL  $name.cu sm_$arch (ptxas)"
        cat "$out/$name.sm_$arch.ptxas.log"
        exit 255
    fi
    echo "ok    $name.cu sm_$arch"
' _ || { echo "check_cuda_kernels: FAILED" >&2; exit 1; }

echo "check_cuda_kernels: ${#sources[@]} files x {$archs} compiled cleanly"

if [ "$resources" != 0 ]; then
    # Word splitting of RESOURCES_ARGS is intended (several options).
    # shellcheck disable=SC2086
    "$python" "$root/tools/kernel_resources.py" "$out" --budgets "$root/tools/kernel_budgets.json" \
        ${RESOURCES_ARGS:-} || { echo "check_cuda_kernels: kernel resource budgets FAILED" >&2; exit 1; }
fi
