import signal
import sys

from stacks.cli import main

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... | head` ends quietly
sys.exit(main())
