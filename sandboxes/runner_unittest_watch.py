"""Kind ``unittest``: what the tests rely on, watched from before the program to the verdict (stdlib only).

Shipped into the sandbox as part of the runner's payload (:mod:`conductor_env.sandboxes.runner`);
:mod:`~conductor_env.sandboxes.runner_unittest` binds :func:`bind` before the program runs and
calls the rest around the tests. Why each check exists is in docs/THREAT_MODEL.md
("BigCodeBench"):

- :func:`snapshot` / :func:`changed`: the identity of every name of the watched namespaces
  (``builtins``, ``unittest``, ``sys``'s callables, the task's libraries, the tests' own module
  and classes), compared before and after every test and around every call of the entry point.
- :func:`quiesce` / :func:`idle_problem`: nothing of the program's runs between test calls: no
  threads, no collector callbacks or automatic collections, no signal handlers or timers, no
  ``weakref.finalize`` or ``sys`` hooks of its own.
- :func:`make_entry_point`: the entry point the tests call, checked on every return; what it
  checks with sits in its code object's constants, which the guard keeps unread. The program's
  classes and the values it returns are judged by :mod:`~conductor_env.sandboxes.runner_unittest_classes`.
- :func:`encode_rows`: the verdicts as text built with ``str`` methods bound before the program.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # in the sandbox, runner.load_payload binds this name (the payload imports only the stdlib)
    from conductor_env.sandboxes import runner_unittest_classes

#: Modules whose every name (and whose classes' every member) must keep its identity.
WATCHED_MODULES = ("builtins", "unittest", "unittest.case", "unittest.result", "unittest.suite",
                   "unittest.loader", "unittest.util", "unittest.mock")  # fmt: skip
#: ``sys`` hooks the interpreter calls by itself (on an unraisable error, an uncaught one ...).
SYS_HOOKS = ("excepthook", "displayhook", "unraisablehook", "breakpointhook")
#: The entry point's wrapper: the capitalised names are replaced by objects in its constants.
_WRAPPER_SOURCE = """
def wrapper(*args, **kwargs):
    before = "ENTER"()
    try:
        result = "TARGET"(*args, **kwargs)
    except "BASE" as error:
        "LEAVE"(before, "NOTHING")
        raise
    "LEAVE"(before, result)
    return result
"""


def bind(kit: dict, libraries: tuple, tests: list) -> None:
    """Adds to ``kit`` what the checks use, bound before the program runs.

    Args:
        kit: The runner's kit (:func:`runner_unittest._bind_kit`).
        libraries: Top-level names of the task's libraries (from the row, never the answer).
        tests: The list that tells the guard the tests run.
    """
    import _thread
    import atexit
    import gc
    import signal
    import sys
    import types
    import weakref

    kit.update({
        "gc_collect": gc.collect, "gc_disable": gc.disable, "gc_isenabled": gc.isenabled,
        "gc_callbacks": gc.callbacks, "gc_baseline": list(gc.callbacks),
        "real_signal": signal._signal.signal, "getsignal": signal._signal.getsignal,
        "setitimer": signal.setitimer, "timers": (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF),
        "signals": [number for number in signal.valid_signals() if number not in (signal.SIGKILL, signal.SIGSTOP)],
        "finalizers": weakref.finalize._registry, "finalizers_before": set(map(id, weakref.finalize._registry)),
        "sys": sys, "asyncgen_hooks": sys.get_asyncgen_hooks,
        "atexit_count": atexit._ncallbacks, "thread_count": _thread._count,
        "libraries": libraries, "tests_phase": tests, "subclasses": type.__dict__["__subclasses__"],
        "mro_of": type.__dict__["__mro__"].__get__, "name_of": type.__dict__["__name__"].__get__,
        "qualname_of": type.__dict__["__qualname__"].__get__,
        "globals_of": type(bind).__dict__["__globals__"].__get__, "code_of": type(bind).__dict__["__code__"].__get__,
        "proxy_keys": type(type.__dict__).keys, "proxy_items": type(type.__dict__).items,
        "c_slots": (types.WrapperDescriptorType, types.MethodDescriptorType), "module_type": types.ModuleType,
        "c_callables": (types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodDescriptorType,
                        types.MethodWrapperType),
        "method_type": types.MethodType,
        "descriptor_types": (property, classmethod, staticmethod, types.MemberDescriptorType, types.GetSetDescriptorType), "map": map, "zip": zip, "set": set, "frozenset": frozenset,
        "tuple": tuple, "float_hex": float.hex, "join": str.join, "as_text": str.__str__, "hex": bytes.hex, "encode": str.encode,
        "exception_text": BaseException.__str__, "exception_args": BaseException.__dict__["args"].__get__,
        "tests_mutate": frozenset(), "function": type(bind), "code_replace": type(bind.__code__).replace, "append": list.append,
        "compile_wrapper": _compile_quietly(_WRAPPER_SOURCE, "<entry point>"),
        "mock_any": type(sys.modules["unittest.mock"].ANY), "mock_call": sys.modules["unittest.mock"]._Call,
        "mock_base": sys.modules["unittest.mock"].NonCallableMock,
        "magic_proxy": sys.modules["unittest.mock"].MagicProxy,
    })  # fmt: skip
    import importlib.machinery
    import io
    import os.path
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update(entry for entry in sys.path if "site-packages" in entry or "dist-packages" in entry)
    roots.update([os.path.realpath(root) for root in roots])
    kit.update({
        "library_roots": tuple(root.rstrip("/") + "/" for root in roots if root.startswith("/") and root.rstrip("/")),
        "normpath": os.path.normpath, "file_finder": importlib.machinery.FileFinder, "module_dict": types.ModuleType.__dict__["__dict__"].__get__, "open_code": io.open_code, "code_type": types.CodeType, "repr": repr,
        "objclass_of": lambda descriptor: type(descriptor).__dict__["__objclass__"].__get__(descriptor), "file_codes": {},
    })  # fmt: skip
    import dataclasses

    slots = {name: dataclasses.Field.__dict__[name].__get__ for name in ("name", "compare", "_field_type")}
    kit.update({
        "dataclass_field": dataclasses.Field, "dataclass_field_marker": dataclasses._FIELD,
        "field_slot": lambda name, field: slots[name](field),
    })  # fmt: skip
    kit["library_files"] = module_files(kit)
    kit["signal_baseline"] = {number: kit["getsignal"](number) for number in kit["signals"]}
    kit["hook_baseline"] = [kit["getattr"](sys, name, None) for name in SYS_HOOKS]
    kit["classes_before"] = runner_unittest_classes.all_classes(kit)


def module_files(kit: dict) -> dict:
    """``name -> __file__`` of every loaded module that has one (what its classes are compiled from)."""
    files = {}
    for name, module in kit["items"](kit["modules"]):
        namespace = kit["getattr"](module, "__dict__", None)
        filename = namespace.get("__file__") if kit["type"](namespace) is dict else None
        if kit["type"](name) is str and kit["type"](filename) is str:
            files[name] = filename
    return files


def _compile_quietly(source: str, filename: str) -> Any:
    """Compiles the wrapper's source, whose calls of string constants are placeholders (no warning)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return compile(source, filename, "exec")


#: How a namespace is watched: every name by identity and, for builtin containers, by content,
#: none new (:data:`STRICT`: the tests' classes and globals, ``unittest``'s classes); a module's
#: attributes (:data:`CALLABLES`: its callables, classes, submodules and dunders by identity, its
#: public scalars by value; new names allowed but for :data:`MODULE_HOOKS`); every name by identity, new ones allowed (:data:`VALUES`).
STRICT, CALLABLES, VALUES = "strict", "callables", "values"
#: A library's class: its behaviour (callables, descriptors, :data:`BEHAVING_DATA`) keeps its
#: identity and it gains none; its other data (class-level state, caches) may change.
CLASS = "class"
#: Class data that changes how objects compare or convert (other data, ``__slotnames__`` that
#: copyreg adds, caches, is state).
BEHAVING_DATA = frozenset({"__hash__", "__array_priority__", "__array_interface__", "__array_struct__", "__slots__"})
#: The label of the tests' globals among the watched namespaces.
TESTS_GLOBALS = "tests:globals"
#: Names a module may not gain: the attribute lookups of its users would run them.
MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})
#: ``sys`` attributes compared by content too (what the import system consults), and those the
#: interpreter itself sets (left out).
SYS_CONTENTS = frozenset({"path", "meta_path", "path_hooks"})
SYS_VOLATILE = frozenset({"last_type", "last_value", "last_traceback", "last_exc", "ps1", "ps2", "exc_type", "exc_value"})
#: Module attributes that the interpreter or a library legitimately rebinds: ``time.tzset()``,
#: ``mimetypes.init()``, and Cython's modules, which wrap ``inspect.isgenerator`` when they load.
VOLATILE_DATA = frozenset({"time.tzname", "time.timezone", "time.altzone", "time.daylight", "mimetypes.inited", "inspect.isgenerator"})
#: What ``warnings`` adds to the globals of the code a warning is attributed to (the tests').
WARNING_REGISTRY = "__warningregistry__"
#: Items of one value read for its fingerprint (containers nested in it included).
FINGERPRINT_ITEMS = 10_000


def namespaces(kit: dict, deep: bool, tests: dict | None = None) -> list:
    """The watched namespaces: ``(label, mapping, mode)`` (:data:`STRICT`, :data:`CALLABLES`,
    :data:`VALUES`, :data:`CLASS`).

    ``deep``: every loaded module of the task's libraries; else (around each call, which must
    stay cheap) only their top-level modules and the modules whose name says ``testing``.
    ``tests``: the tests' globals; the modules they hold (and those modules' submodules) and the
    classes they hold are watched too, whichever library they come from.
    """
    found: list = []
    classes_seen: set = set()
    modules, type_, vars_, id_ = kit["modules"], kit["type"], kit["vars"], kit["id"]
    module_type, issubclass_ = kit["module_type"], kit["issubclass"]
    libraries = kit["libraries"]
    reached: set = set()
    tests_classes: list = []
    for name, value in kit["items"](tests or {}):
        if issubclass_(type_(value), module_type):
            reached.add(id_(value))
            inner = vars_(value)
            if type_(inner) is dict:
                for attribute in kit["list"](inner.values()):
                    if issubclass_(type_(attribute), module_type):
                        reached.add(id_(attribute))
        elif issubclass_(type_(value), type_) and name != "__builtins__":
            tests_classes.append((name, value))
    for name in kit["list"](modules):
        top = name.partition(".")[0]
        library = top in libraries and (deep or name == top or "testing" in name)
        module = modules.get(name)
        if not (name in WATCHED_MODULES or library or name == "sys" or id_(module) in reached):
            continue
        if not issubclass_(type_(module), module_type):  # None, or an object a library put there
            continue
        namespace = vars_(module)
        if type_(namespace) is not dict:
            continue
        found.append((name, namespace, CALLABLES))
        if name == "builtins":
            continue
        for attribute, value in kit["items"](namespace):
            # A package's own classes, where they are exported too (pandas.DataFrame is
            # pandas.core.frame's): watched once, under the first module that shows them.
            if issubclass_(type_(value), type_) and id_(value) not in classes_seen:  # no __class__ asked
                owner = kit["getattr"](value, "__module__", "")
                if kit["type"](owner) is str and owner.partition(".")[0] == top:
                    classes_seen.add(id_(value))
                    mode = STRICT if name in WATCHED_MODULES else CLASS
                    found.append((name + "." + attribute, vars_(value), mode))
    for name, value in tests_classes:  # classes the tests imported (collections.Counter ...)
        if id_(value) not in classes_seen and type_(value.__module__) is str and value.__module__ != "__test__":
            classes_seen.add(id_(value))
            found.append((TESTS_GLOBALS + "." + name + " (class)", vars_(value), CLASS))
    return found


_SCALARS = (int, str, bytes, bool)


def fingerprint(kit: dict, value: Any) -> Any:
    """``id(value)``, or for a builtin container (exact types) its identity and its items'
    fingerprints, nested containers included (at most :data:`FINGERPRINT_ITEMS` items)."""
    type_, id_ = kit["type"], kit["id"]
    kind = type_(value)
    if not (kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset):
        return id_(value)
    budget = [FINGERPRINT_ITEMS]

    def walk(item: Any, depth: int) -> Any:
        kind = type_(item)
        budget[0] -= 1
        if budget[0] < 0 or depth > 8 or not (kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset):
            return id_(item)
        if kind is dict:
            return (id_(item), kit["tuple"]((id_(key), walk(entry, depth + 1)) for key, entry in kit["items"](item)))
        if kind is set or kind is frozenset:
            return (id_(item), kit["frozenset"](kit["map"](id_, item)))
        return (id_(item), kit["tuple"](walk(entry, depth + 1) for entry in item))

    return walk(value, 0)


def _module_entry(kit: dict, label: str, key: str, value: Any) -> Any:
    """What of a module's attribute is compared (``None``: nothing, it is library state)."""
    type_ = kit["type"]
    if label == "sys":
        if key in SYS_VOLATILE:
            return None
        if key == "path" and type_(value) is list:  # tasks append to it (BigCodeBench/714): a prefix is kept
            return ("prefix", kit["id"](value), kit["tuple"]((entry if type_(entry) is str else kit["id"](entry)) for entry in value))
        if key == "path_importer_cache" and type_(value) is dict:  # filled by every import
            finder_type = kit["file_finder"]
            return ("finders", kit["id"](value), {entry: (kit["id"](finder), finder is None or type_(finder) is finder_type) for entry, finder in kit["items"](value) if type_(entry) is str})
        return fingerprint(kit, value) if key in SYS_CONTENTS else kit["id"](value)
    if label + "." + key in VOLATILE_DATA:
        return None
    if kit["callable"](value) or kit["issubclass"](type_(value), kit["module_type"]) or (key[:2] == "__" and key[-2:] == "__"):
        return kit["id"](value)
    if key[:1] == "_":
        return None  # a library's private data: its state
    kind = type_(value)
    if kind is int or kind is str or kind is bytes or kind is bool:
        return (kit["id"](kind), value)
    if kind is float:
        return (kit["id"](kind), kit["float_hex"](value))
    return None  # containers and objects: a module's state (mimetypes.init() rebinds its maps)


def snapshot(kit: dict, watched: list) -> dict:
    """``label -> {name: what is compared}`` of the watched namespaces, plus ``sys.modules``'
    entries of the watched modules and the types of those modules.

    Modules keep their private data and their public objects' state out: the libraries keep
    state there that legitimately changes.
    """
    id_, dict_, zip_, type_ = kit["id"], kit["dict"], kit["zip"], kit["type"]
    seen: dict = {}
    for label, namespace, mode in watched:
        for key in namespace:
            if type_(key) is not str:  # its __hash__ and __eq__ would be the program's, run here
                seen[label] = {"<a name that is not a str>": 0}
                break
        else:
            if mode == CALLABLES:
                entries = {}
                for key, value in kit["items"](namespace):
                    entry = _module_entry(kit, label, key, value)
                    if entry is not None:
                        entries[key] = entry
                seen[label] = entries
            elif mode == CLASS:
                descriptors, callable_ = kit["descriptor_types"], kit["callable"]
                seen[label] = {key: id_(value) for key, value in kit["proxy_items"](namespace) if callable_(value) or type_(value) in descriptors or key in BEHAVING_DATA}
            elif mode == STRICT:
                # What the tests' own code changes in place is compared by identity only.
                mutated = kit["tests_mutate"] if label[:5] == "tests" else ()
                seen[label] = {key: (id_(value) if key in mutated else fingerprint(kit, value)) for key, value in zip_(namespace, namespace.values()) if key != WARNING_REGISTRY}
            else:
                seen[label] = dict_(zip_(namespace, kit["map"](id_, namespace.values())))
    modules = kit["modules"]
    entries = {}
    for label, _namespace, mode in watched:
        if mode == CALLABLES:
            module = modules.get(label)
            entries[label] = (id_(module), id_(type_(module)))
    seen["sys.modules"] = entries
    return seen


def changed(kit: dict, base: dict, now: dict, watched: list) -> str:
    """The first watched name whose value changed, or that a strict namespace gained ("" when none)."""
    if now == base:
        return ""
    strict = {label for label, _namespace, mode in watched if mode == STRICT or mode == CLASS}
    modules = {label for label, _namespace, mode in watched if mode == CALLABLES}
    for label, names in kit["items"](base):
        current = now.get(label)
        if current is None:
            return label
        for key, value in kit["items"](names):
            if current.get(key) != value and not _grown(kit, value, current.get(key)):
                return f"{label}.{key}"
        if label in strict and kit["len"](current) != kit["len"](names):
            for key in current:
                if key not in names:
                    return f"{label}.{key} (a new member)"
        if label in modules:
            for key in MODULE_HOOKS:
                if key in current and key not in names:
                    return f"{label}.{key} (a new member)"
    return ""


def _grown(kit: dict, before: Any, now: Any) -> bool:
    """Whether ``sys.path`` only grew past its prefix, or ``sys.path_importer_cache`` kept every
    finder it had and gained only the import system's own (:func:`_module_entry`)."""
    type_ = kit["type"]
    if type_(before) is not tuple or type_(now) is not tuple or kit["len"](before) != 3 or kit["len"](now) != 3:
        return False
    if before[0] != now[0]:
        return False
    if before[0] == "prefix":  # the tests may rebind it to a slice (BigCodeBench/715)
        return now[2][: kit["len"](before[2])] == before[2]
    if before[1] != now[1]:
        return False
    if before[0] == "finders":
        for entry, (finder, _plain) in kit["items"](before[2]):
            if entry in now[2] and now[2][entry][0] != finder:
                return False
        for entry, (finder, plain) in kit["items"](now[2]):
            if entry not in before[2] and not plain:
                return False
        return True
    return False


def quiesce(kit: dict) -> str:
    """Before the tests: runs pending collections, then stops automatic ones; removes the
    program's signal handlers, timers and collector callbacks. Returns what the program left
    that is refused instead (threads, finalizers, hooks: "" when nothing).

    Finalizers the collection runs here are the program's code: the caller compares the
    watched namespaces with their state before the program only after this.
    """
    kit["gc_collect"]()
    kit["gc_disable"]()
    for number, handler in kit["items"](kit["signal_baseline"]):
        if handler is not None and kit["getsignal"](number) is not handler:  # None: set outside Python
            kit["real_signal"](number, handler)
    for timer in kit["timers"]:
        kit["setitimer"](timer, 0)
    callbacks = kit["gc_callbacks"]
    callbacks[:] = kit["gc_baseline"]
    return idle_problem(kit)


def idle_problem(kit: dict, threads: bool = True) -> str:
    """What of the program's could run between test calls ("" when nothing); ``threads``: any
    thread alive counts (after the top level, when no test has started one)."""
    if threads and kit["thread_count"]() != 0:
        return "the program left threads running"
    if kit["gc_isenabled"]():
        return "the program turned automatic garbage collection back on"
    callbacks, baseline = kit["gc_callbacks"], kit["gc_baseline"]
    if kit["len"](callbacks) != kit["len"](baseline):
        return "the program added a garbage-collector callback"
    for now, before in kit["zip"](callbacks, baseline):
        if now is not before:
            return "the program replaced a garbage-collector callback"
    for finalizer, info in kit["items"](kit["finalizers"]):
        if kit["id"](finalizer) not in kit["finalizers_before"] and runner_unittest_classes.programs_code(kit, info.func):
            return "the program registered a weakref.finalize"
    for number, handler in kit["items"](kit["signal_baseline"]):
        if kit["getsignal"](number) is not handler:
            return f"the program installed a handler for signal {number}"
    for timer in kit["timers"]:
        if kit["setitimer"](timer, 0) != (0.0, 0.0):
            return "the program started a timer"
    sys = kit["sys"]
    for name, hook in kit["zip"](SYS_HOOKS, kit["hook_baseline"]):
        if kit["getattr"](sys, name, None) is not hook:
            return f"the program replaced sys.{name}"
    for hook in kit["asyncgen_hooks"]():
        if hook is not None:
            return "the program set asynchronous-generator hooks"
    return ""


def make_entry_point(kit: dict, target: Any, watched: list, violations: list) -> Any:
    """The function the tests call instead of the program's entry point ``target`` (a function).

    On every return (or exception) it compares the watched namespaces with their state when the
    call began, and refuses threads left running, new finalizers or collector callbacks, and
    returned values that answer comparisons themselves (:func:`value_problem`); each finding is
    appended to ``violations``, which fails the running test. Its state is in its code object's
    constants, whose read the guard refuses.
    """
    nothing: list = []

    def enter() -> tuple:
        before = snapshot(kit, watched), kit["thread_count"]()
        kit["append"](kit["program_running"], True)
        return before

    def leave(before: tuple, result: Any) -> None:
        kit["pop"](kit["program_running"])
        problem = changed(kit, before[0], snapshot(kit, watched), watched)
        problem = problem and f"{problem} changed during a call of the entry point"
        if not problem and kit["thread_count"]() > before[1]:
            problem = "the program left threads running after a call"
        problem = problem or idle_problem(kit, threads=False)
        if not problem and result is not nothing:
            problem = runner_unittest_classes.value_problem(kit, result)
        if problem:
            kit["append"](violations, problem)

    namespace: dict = {"__builtins__": {}}
    kit["exec"](kit["compile_wrapper"], namespace)
    code = namespace["wrapper"].__code__
    replacements = {"ENTER": enter, "TARGET": target, "LEAVE": leave, "BASE": kit["base_exception"], "NOTHING": nothing}
    constants = kit["tuple"](replacements.get(constant, constant) if kit["type"](constant) is str else constant for constant in code.co_consts)
    wrapper = kit["function"](kit["code_replace"](code, co_consts=constants), {"__builtins__": {}}, kit["as_text"](target.__name__))
    wrapper.__wrapped__ = target  # inspect.signature(task_func) reads the program's function
    kit["append"](kit["tests_phase"], wrapper)
    return wrapper


def safe_message(kit: dict, error: BaseException, context: str, limit: int) -> str:
    """``Type: message`` of an exception, reading the message only from builtin data.

    Exceptions of the program's own classes, or carrying its objects, are named by type alone:
    reading them would run its code between test calls.
    """
    kind = kit["type"](error)
    text = kit["name_of"](kind)
    try:
        arguments = kit["exception_args"](error)
        plain = kit["id"](kind) in kit["classes_before"]
        for argument in arguments:
            argument_type = kit["type"](argument)
            plain = plain and (argument_type is str or argument_type is int or argument_type is float)
        if plain:
            text = text + ": " + kit["as_text"](kit["exception_text"](error))
    except kit["base_exception"]:  # noqa: BLE001 - the type alone then
        pass
    text = f"{context}: {text}" if context else text
    return text[:limit]


def encode_rows(kit: dict, rows: list) -> str:
    """``name \\x1f verdict \\x1f hex(message)`` rows joined by ``\\x1e`` (no serialiser the program can reach)."""
    as_text, hex_, encode, join = kit["as_text"], kit["hex"], kit["encode"], kit["join"]
    lines = []
    for name, verdict, message in rows:
        lines.append(join("\x1f", [as_text(name), as_text(verdict), hex_(encode(as_text(message), "utf-8", "replace"))]))
    return join("\x1e", lines)
