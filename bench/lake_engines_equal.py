"""The fleet report of one lake on DuckDB and on a local Spark: equal (run on the 100 M lake).

Run::

    python bench/lake_engines_equal.py bench/out/lake100
"""

import json
import math
import sys
import time

from tracekit.fleet import fleet_report
from tracekit.lake.local import LocalSpark

lake = sys.argv[1]
P = {"p50_ms", "p95_ms", "p99_ms", "own_p50_ms", "own_p95_ms"}


def same(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            if k in P and a[k] is not None and b[k] is not None:
                assert math.isclose(a[k], b[k], rel_tol=1e-13), (where, k, a[k], b[k])
            else:
                same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for n, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{n}]")
    else:
        assert a == b, (where, a, b)


duck = json.loads(json.dumps(fleet_report(lake=lake).to_dict()))
with LocalSpark(memory="4g", cores=2, shuffle_partitions=4) as spark:
    t = time.perf_counter()
    sp = json.loads(
        json.dumps(fleet_report(lake=lake, engine="spark", remote=spark.remote).to_dict())
    )
    print(f"spark report {time.perf_counter() - t:.1f} s")
exact = json.dumps(duck, sort_keys=True) == json.dumps(sp, sort_keys=True)
same(duck, sp)
print("equal (percentiles within 1e-13 relative); bit-identical:", exact)
