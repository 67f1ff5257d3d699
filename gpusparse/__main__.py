"""``python -m gpusparse``: print versions and devices; ``python -m gpusparse warmup``: fill the kernel cache.

Without a subcommand, prints :func:`gpusparse.show_config` (versions,
devices and why a device is unavailable). ``warmup`` compiles the CPU
kernels into Numba's on-disk cache (:func:`gpusparse.warmup`)::

    python -m gpusparse warmup [--dtypes float64,float32] [--families construct,products] [--jobs N]
                               [--portable [DIR]] [--quiet]
"""

from __future__ import annotations

import argparse
import sys


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m gpusparse",
        description="Without a command: print versions, devices and why a device is unavailable.")
    commands = parser.add_subparsers(dest="command", metavar="{warmup}")
    warm = commands.add_parser(
        "warmup", help="compile the CPU kernels into Numba's on-disk cache",
        description="Compile gpusparse's CPU kernels for the common dtypes into Numba's on-disk cache, "
                    "so that later processes load them instead of compiling them. Run it after installing "
                    "and when building container images.")
    warm.add_argument("--dtypes", default=None,
                      help="comma-separated value dtypes (default: float64,float32,int64,int32,bool,complex128)")
    warm.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                      help="worker processes compiling at the same time (default: the usable cores, "
                           "each holding less than 1 GiB)")
    warm.add_argument("--families", default=None,
                      help="comma-separated operation families (default: construct,elementwise,reductions,"
                           "products,indexing,manipulation)")
    warm.add_argument("--portable", nargs="?", const=True, default=False, metavar="DIR",
                      help="build the prebuilt cache that any machine of this architecture, Python and Numba "
                           "loads: compile for Numba's generic CPU into the package (or into DIR, which "
                           "GPUSPARSE_PREBUILT_CACHE then names to the processes that read it)")
    warm.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    args = parser.parse_args(argv)
    if args.command == "warmup":
        from gpusparse._warmup import warmup
        dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()] if args.dtypes else None
        try:
            families = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else None
            summary = warmup(dtypes=dtypes, progress=not args.quiet, jobs=args.jobs, portable=args.portable,
                             families=families)
        except TypeError as exc:
            parser.error(f"--{str(exc).split()[0]}: {exc}")  # the message starts with the argument's name
        except (PermissionError, ValueError) as exc:
            parser.error(str(exc))
        if not args.quiet:
            processes = f"{summary['jobs']} processes" if summary["jobs"] > 1 else "1 process"
            print(f"gpusparse warmup: {summary['calls']} calls in {summary['seconds']:.1f} s "
                  f"({processes}, {summary['cpu_seconds']:.1f} s of CPU); kernels cached in {summary['cache_dir']}")
        return 0
    from gpusparse._config import show_config
    show_config()
    return 0


if __name__ == "__main__":
    sys.exit(main())
