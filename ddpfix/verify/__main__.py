"""``python -m ddpfix.verify SCRIPT [OPTIONS] -- ARGS``: the verify command without the main CLI."""

from ddpfix.verify.command import main

main()
