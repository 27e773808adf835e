"""Record the registered signature of every TVM_MEMPLAN_GLOBAL in src_cpp/ir/schema.def.

Run after adding a global with an empty signature; the self-check then verifies the signature
at import. Globals that TVM registers without a type schema keep "".

    python tools/fill_schema_signatures.py [--check]
"""

import argparse
import re
import sys
from pathlib import Path

import tvm_ffi

import tvm_memplan  # noqa: F401  (loads the library that renders signatures)

SCHEMA = Path(__file__).resolve().parents[1] / "src_cpp" / "ir" / "schema.def"
GLOBAL = re.compile(r'^(TVM_MEMPLAN_GLOBAL\((\w+), "([^"]+)", )"([^"]*)"\)$')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale entries")
    args = parser.parse_args()
    render = tvm_ffi.get_global_func("tvm_memplan.ir.GlobalSignature")
    lines, stale = [], []
    for line in SCHEMA.read_text().splitlines():
        match = GLOBAL.match(line)
        if match:
            actual = str(render(match.group(3)))
            if actual == "ffi.Function":  # registered without a type schema
                actual = ""
            if actual != match.group(4):
                stale.append(f"{match.group(3)}: {match.group(4)!r} -> {actual!r}")
                line = f'{match.group(1)}"{actual}")'
        lines.append(line)
    for entry in stale:
        print(entry)
    if not args.check:
        SCHEMA.write_text("\n".join(lines) + "\n")
    return 1 if (stale and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
