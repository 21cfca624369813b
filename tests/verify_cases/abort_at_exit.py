"""Correct DDP (tiny_correct.py), but rank 1's process aborts after the interpreter has shut down, the
way a library's C++ destructor can at exit (`completes` fails, naming the crash as one at exit)."""
import ctypes
import os

from tiny_correct import main

if __name__ == "__main__":
    main()
    if int(os.environ.get("RANK", 0)) == 1:
        libc = ctypes.CDLL(None)
        # runs in exit(), after Python's finalization, like a static destructor
        libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)
