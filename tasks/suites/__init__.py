"""The suites shipped with the package, one module each (``import conductor_env.tasks.suites``).

Support code they share (the registry, dataset loading, answer extraction, sandboxed grading)
lives directly in :mod:`conductor_env.tasks`. Nothing is imported here, so building one suite
never imports the others; :data:`conductor_env.tasks.BUILTIN_SUITES` names each by module path.
"""
