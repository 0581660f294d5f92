"""Process 1 exits before it joins; process 0's initialize raises (it does not abort)."""
import os
import sys

import hlodsl as hd

if os.environ["HLODSL_PROCESS_ID"] == "1":
    sys.exit(3)
try:
    hd.distributed.initialize(timeout_s=4)
except TimeoutError as e:
    print(f"TimeoutError: {e}", flush=True)
    sys.exit(4)
print("unexpected: joined", flush=True)
