"""The use cases, one module each: ``ee/ops/<verb>.py`` (init, transfer, sync, history, recovery, why,
feedback, doctor).

Each is bound by the façade (:class:`ee.workspace.Workspace` calls it with itself), as dvc binds
``dvc/repo/<verb>.py``. A use case takes the workspace as an argument and uses what it holds (its root,
store, git, config, lock); it never imports ``ee.workspace``, so nothing below the façade calls back up.
"""
