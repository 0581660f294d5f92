"""Process 1 dies after joining; process 0 then runs a program that needs it."""
import os
import sys
import time

import numpy as np

import hlodsl as hd

hd.distributed.initialize(timeout_s=int(os.environ.get("TEST_TIMEOUT_S", "10")))
if hd.distributed.process_index() == 1:
    os._exit(3)
time.sleep(1)
mesh = hd.make_mesh((len(hd.devices()),), ("d",))
start = time.monotonic()
try:
    x = hd.distributed.make_array_from_process_local_data(
        hd.NamedSharding(mesh, hd.P("d")), np.ones(2, np.float32))
    out = hd.compile(lambda a: hd.stdlib.sum(a), out_shardings=hd.NamedSharding(mesh, hd.P()))(x)
    print("unexpected result", np.asarray(out))
except Exception as e:  # the error the user sees
    print(f"failed after {time.monotonic() - start:.0f} s: {type(e).__name__}: {str(e)[:200]}")
    sys.exit(5)
