"""Which surface a command speaks as (``base.voice``): the command line's flags, or, when
the GitHub Action runs the command and says so (``RAGSPAN_SETTINGS_FROM=action``, set in
action.yml), the Action's inputs. A label of the messages only: no setting changes."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager

from ragspan.base.voice import speaking

ACTION = "action"


def caller() -> AbstractContextManager[None]:
    """Messages inside name settings as the caller of the command line spells them."""
    return speaking(ACTION if os.environ.get("RAGSPAN_SETTINGS_FROM") == ACTION else "cli")
