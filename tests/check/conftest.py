"""Golden checker tests: ``pytest --update-golden`` (the option is declared in
``tests/conftest.py``) rewrites the inline expectations (``// error: code`` /
``// warning: code`` at the end of lines) of the ``tests/check/*.flow`` files, and the render
snapshots under ``tests/check/render/``, to match what the checker reports now.
``FLOW_UPDATE_GOLDEN=1`` does the same from any directory.
"""
