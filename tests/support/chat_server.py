"""The scripted model server of the tests is the packaged one: :mod:`agentflow.testing.chat_server`
(re-exported here so tests keep importing ``support.chat_server``)."""

from agentflow.testing.chat_server import *  # noqa: F403
from agentflow.testing.chat_server import __all__  # noqa: F401
