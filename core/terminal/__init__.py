"""What the command lines share: how a command runs, its exit codes, the spinner and the streamed reply.

The library never imports this package: a long operation of the library takes a ``progress(label)``
callback, and the command line passes :func:`progress` when it wants a spinner.
"""

from core.terminal import exit_codes
from core.terminal.addresses import allowed_hosts, is_loopback, number_in
from core.terminal.reply_display import ReplyDisplay
from core.terminal.runner import one_line, run_cli, setup_logging, visible
from core.terminal.spinner import Spinner, progress, prompt_shown, seconds, stop_all, tqdm

__all__ = ["ReplyDisplay", "Spinner", "allowed_hosts", "exit_codes", "is_loopback", "number_in", "one_line",
           "progress", "prompt_shown", "run_cli", "seconds", "setup_logging", "stop_all", "tqdm", "visible"]
