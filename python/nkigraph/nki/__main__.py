"""python3 -m nkigraph.nki FILE.py [args]: runs an NKI kernel script with
NKI's module names aliased to nkigraph's front-end."""

import os
import runpy
import sys

from . import install_aliases


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print("usage: python3 -m nkigraph.nki FILE.py [args...]\n"
              "Runs FILE.py with `neuronxcc.nki` and `nki` imported from "
              "nkigraph.nki:\nits kernels are traced into nkigraph graphs "
              "and run on the interpreter.", file=sys.stderr)
        return 2
    install_aliases()
    sys.argv = argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[1])))
    runpy.run_path(argv[1], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
