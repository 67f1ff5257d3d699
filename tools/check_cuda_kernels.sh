#!/usr/bin/env bash
# Type-check every CUDA kernel family with nvcc, for sm_80 and sm_90, with
# every template instantiated (-DGPUSPARSE_INSTANTIATE_ALL) and warnings as
# errors. Needs no GPU, only nvcc.
#
#   tools/check_cuda_kernels.sh            # from anywhere
#   NVCC=/path/to/nvcc JOBS=4 tools/check_cuda_kernels.sh
#
# Exits 0 with a notice when nvcc is absent; non-zero when any compile fails.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kernels="$root/cuda_kernels"
nvcc="${NVCC:-nvcc}"
jobs="${JOBS:-2}"
archs="${ARCHS:-80 90}"

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

export nvcc kernels out
printf '%s\0%s\0' "${jobs_list[@]}" | xargs -0 -n 2 -P "$jobs" bash -c '
    src="$1"; arch="$2"; name="$(basename "$src" .cu)"
    log="$out/$name.sm_$arch.log"
    if "$nvcc" -DGPUSPARSE_INSTANTIATE_ALL --ptx -arch="sm_$arch" -std=c++17 \
        -I "$kernels" -Werror all-warnings "$src" -o "$out/$name.sm_$arch.ptx" >"$log" 2>&1; then
        echo "ok    $name.cu sm_$arch"
    else
        echo "FAIL  $name.cu sm_$arch"
        cat "$log"
        exit 255
    fi
' _ || { echo "check_cuda_kernels: FAILED" >&2; exit 1; }

echo "check_cuda_kernels: ${#sources[@]} files x {$archs} compiled cleanly"
