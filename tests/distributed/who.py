"""Joins the group its launcher's environment describes (no arguments to initialize),
then sums one value per device across every process and prints what it saw."""
import numpy as np

import hlodsl as hd

hd.distributed.initialize(timeout_s=60)
mesh = hd.make_mesh((len(hd.devices()),), ("d",))
local = np.full(len(hd.distributed.local_devices()), hd.distributed.process_index() + 1.0)
x = hd.distributed.make_array_from_process_local_data(hd.NamedSharding(mesh, hd.P("d")), local)
total = hd.compile(lambda a: hd.stdlib.sum(a), out_shardings=hd.NamedSharding(mesh, hd.P()))(x)
print(f"process {hd.distributed.process_index()} of {hd.distributed.process_count()}: "
      f"{len(hd.devices())} devices, sum {float(np.asarray(total))}")
