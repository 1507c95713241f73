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
  checks with sits in its code object's constants, which the guard keeps unread.
- :func:`encode_rows`: the verdicts as text built with ``str`` methods bound before the program.
"""

from __future__ import annotations

from typing import Any

#: Modules whose every name (and whose classes' every member) must keep its identity.
WATCHED_MODULES = ("builtins", "unittest", "unittest.case", "unittest.result", "unittest.suite",
                   "unittest.loader", "unittest.util", "unittest.mock")  # fmt: skip
#: Class members through which an object answers a comparison, a truth test or a conversion
#: itself: a class the program made with one of them could pass ``assertEqual`` with any value.
ANSWERING_MEMBERS = frozenset(
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__", "__contains__",
     "__getattr__", "__getattribute__", "__instancecheck__", "__subclasscheck__", "__float__", "__int__",
     "__index__", "__complex__", "__abs__", "__sub__", "__rsub__", "__round__", "__array__", "__array_ufunc__",
     "__array_function__", "__iter__", "__getitem__", "__hash__", "__str__", "__repr__", "__format__"}
)
#: ``sys`` hooks the interpreter calls by itself (on an unraisable error, an uncaught one ...).
SYS_HOOKS = ("excepthook", "displayhook", "unraisablehook", "breakpointhook")
#: Most items of a returned value that are looked at (containers nested in it included).
VALUE_ITEMS = 100_000
#: The entry point's wrapper: the capitalised names are replaced by objects in its constants.
_WRAPPER_SOURCE = '''
def wrapper(*args, **kwargs):
    before = "ENTER"()
    try:
        result = "TARGET"(*args, **kwargs)
    except "BASE" as error:
        "LEAVE"(before, "NOTHING")
        raise
    "LEAVE"(before, result)
    return result
'''


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
        "tuple": tuple, "join": str.join, "as_text": str.__str__, "hex": bytes.hex, "encode": str.encode,
        "exception_text": BaseException.__str__, "exception_args": BaseException.__dict__["args"].__get__,
        "function": type(bind), "code_replace": type(bind.__code__).replace, "append": list.append,
        "compile_wrapper": _compile_quietly(_WRAPPER_SOURCE, "<entry point>"),
        "mock_any": type(sys.modules["unittest.mock"].ANY), "mock_call": sys.modules["unittest.mock"]._Call,
        "mock_base": sys.modules["unittest.mock"].NonCallableMock,
        "magic_proxy": sys.modules["unittest.mock"].MagicProxy,
        "lazy_code": (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType),
    })  # fmt: skip
    kit["signal_baseline"] = {number: kit["getsignal"](number) for number in kit["signals"]}
    kit["hook_baseline"] = [kit["getattr"](sys, name, None) for name in SYS_HOOKS]
    kit["classes_before"] = all_classes(kit)


def _compile_quietly(source: str, filename: str) -> Any:
    """Compiles the wrapper's source, whose calls of string constants are placeholders (no warning)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return compile(source, filename, "exec")


def all_classes(kit: dict) -> dict:
    """``id -> class`` of every class alive (walked from ``object`` through ``type.__subclasses__``)."""
    found: dict = {kit["id"](object): object}
    pending = [object]
    subclasses, id_, type_ = kit["subclasses"], kit["id"], kit["type"]
    while pending:
        klass = pending.pop()
        try:
            below = subclasses(klass)
        except kit["base_exception"]:  # a metaclass other than type: its classes are walked by type's
            below = type_.__subclasses__(klass) if kit["isinstance"](klass, type_) else []
        for subclass in below:
            key = id_(subclass)
            if key not in found:
                found[key] = subclass
                pending.append(subclass)
    return found


#: Of :data:`ANSWERING_MEMBERS`, those that no class the program makes may define, whether or
#: not its objects are returned (they could reach the tests inside a library's object).
COMPARING_MEMBERS = frozenset(
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__getattr__", "__getattribute__",
     "__instancecheck__", "__subclasscheck__", "__array_ufunc__", "__array_function__"}
)


def answering_classes(kit: dict, before: dict) -> str:
    """The name of a class made since ``before`` that answers comparisons itself ("" when none).

    Mocks are left out (every mock gets a class of its own with comparison members); the tests
    make them, and what a returned mock answers is checked by :func:`value_problem`. So are
    members that are a C type's own slots (numpy makes dtype classes as it needs them), and
    classes a module's own code defined (:func:`library_class`).
    """
    issubclass_, keys, mock_base = kit["issubclass"], kit["proxy_keys"], kit["mock_base"]
    for key, klass in kit["items"](all_classes(kit)):
        if key in before or issubclass_(klass, mock_base):
            continue
        for member, value in kit["proxy_items"](kit["vars"](klass)):
            if kit["type"](member) is not str or member not in COMPARING_MEMBERS:
                continue
            if kit["type"](value) in kit["c_slots"]:  # an existing C type's own slot: checks its self's type
                continue
            if not library_class(kit, klass):
                return f"{kit['name_of'](klass)}.{member}"
    return ""


def library_class(kit: dict, klass: type) -> bool:
    """Whether ``klass`` was defined by a module's own code (a lazy import's class, say
    ``email.charset.Charset``): the module's namespace holds it under its qualified name, and
    its comparison members were compiled from the module's own file, with its namespace as their
    globals. The namespace is those members' globals, named after the module (a module a test
    dropped from ``sys.modules`` with ``patch.dict`` and imported again leaves its first
    classes behind), else the loaded module's. A program that compiles its class under a
    module's file name and runs it in that module's namespace passes this test (see
    docs/THREAT_MODEL.md); its objects are still refused where the entry point returns them."""
    type_, vars_ = kit["type"], kit["vars"]
    try:
        members = vars_(klass)
        module_name = members.get("__module__")
        if type_(module_name) is not str or module_name in ("__test__", "__main__"):
            return False
        functions = [value for name, value in kit["proxy_items"](members)
                     if type_(name) is str and name in COMPARING_MEMBERS and type_(value) is kit["function"]]
        if functions:  # the module's namespace they were defined in, imported again or not
            namespace = kit["globals_of"](functions[0])
            defined_in = namespace.get("__name__")
            if type_(defined_in) is not str or not (defined_in == module_name or defined_in.startswith(module_name + ".")):
                return False  # (a package may name its submodules' classes after itself: numpy's set_module)
        else:
            module = kit["modules"].get(module_name)
            if module is None:
                return False
            namespace = vars_(module)
        found = namespace
        for part in kit["str"].split(kit["as_text"](kit["qualname_of"](klass)), "."):
            found = (found if type_(found) is dict else vars_(found)).get(part)
        if found is not klass and type_(found) is not klass:  # or the module's one instance of it
            return False
        source = namespace.get("__file__")
        for function in functions:  # defined by the module's own file, not code run in its namespace
            if kit["globals_of"](function) is not namespace or kit["code_of"](function).co_filename != source:
                return False
    except kit["base_exception"]:  # noqa: BLE001 - not resolvable: not a library's
        return False
    return True


#: How a namespace is watched: every name, none new (a class); callables, new ones allowed (a
#: module, whose data is library state); every name, new ones allowed (the tests' globals).
STRICT, CALLABLES, VALUES = "strict", "callables", "values"
#: A library's class: its behaviour (callables, descriptors, :data:`BEHAVING_DATA`) keeps its
#: identity and it gains none; its other data (class-level state, caches) may change.
CLASS = "class"
#: Class data that changes how objects compare or convert (other data, ``__slotnames__`` that
#: copyreg adds, caches, is state).
BEHAVING_DATA = frozenset({"__hash__", "__array_priority__", "__array_interface__", "__array_struct__", "__slots__"})


def namespaces(kit: dict, deep: bool) -> list:
    """The watched namespaces: ``(label, mapping, mode)`` (:data:`STRICT`, :data:`CALLABLES`,
    :data:`VALUES`, :data:`CLASS`).

    ``deep``: every loaded module of the task's libraries; else (around each call, which must
    stay cheap) only their top-level modules and the modules whose name says ``testing``.
    """
    found: list = []
    classes_seen: set = set()
    modules, isinstance_, type_, vars_ = kit["modules"], kit["isinstance"], kit["type"], kit["vars"]
    libraries = kit["libraries"]
    for name in kit["list"](modules):
        top = name.partition(".")[0]
        library = top in libraries and (deep or name == top or "testing" in name)
        if not (name in WATCHED_MODULES or library or name == "sys"):
            continue
        module = modules.get(name)
        if not kit["issubclass"](type_(module), kit["module_type"]):  # None, or an object a library put there
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
            if kit["issubclass"](type_(value), type_) and kit["id"](value) not in classes_seen:  # no __class__ asked
                owner = kit["getattr"](value, "__module__", "")
                if kit["type"](owner) is str and owner.partition(".")[0] == top:
                    classes_seen.add(kit["id"](value))
                    mode = STRICT if name in WATCHED_MODULES else CLASS
                    found.append((name + "." + attribute, vars_(value), mode))
    return found


def snapshot(kit: dict, watched: list) -> dict:
    """``label -> {name: id(value)}`` of the watched namespaces, plus ``sys.modules``' entries.

    Module globals that are plain data (not callable, not a class) are left out: the libraries
    keep state there that legitimately changes.
    """
    id_, callable_, dict_, map_, zip_, type_ = kit["id"], kit["callable"], kit["dict"], kit["map"], kit["zip"], kit["type"]
    seen: dict = {}
    for label, namespace, mode in watched:
        for key in namespace:
            if type_(key) is not str:  # its __hash__ and __eq__ would be the program's, run here
                seen[label] = {"<a name that is not a str>": 0}
                break
        else:
            if mode == CALLABLES:
                seen[label] = {key: id_(value) for key, value in kit["items"](namespace) if callable_(value)}
            elif mode == CLASS:
                descriptors = kit["descriptor_types"]
                seen[label] = {key: id_(value) for key, value in kit["proxy_items"](namespace)
                               if callable_(value) or type_(value) in descriptors or key in BEHAVING_DATA}
            else:
                seen[label] = dict_(zip_(namespace, map_(id_, namespace.values())))
    seen["sys.modules"] = {label: id_(kit["modules"].get(label)) for label, _namespace, mode in watched if mode == CALLABLES}
    return seen


def changed(kit: dict, base: dict, now: dict, watched: list) -> str:
    """The first watched name whose value changed, or that a strict namespace gained ("" when none)."""
    if now == base:
        return ""
    strict = {label for label, _namespace, mode in watched if mode == STRICT or mode == CLASS}
    for label, names in kit["items"](base):
        current = now.get(label)
        if current is None:
            return label
        for key, value in kit["items"](names):
            if current.get(key) != value:
                return f"{label}.{key}"
        if label in strict and kit["len"](current) != kit["len"](names):
            for key in current:
                if key not in names:
                    return f"{label}.{key} (a new member)"
    return ""


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


def idle_problem(kit: dict) -> str:
    """What of the program's could run between test calls ("" when nothing)."""
    if kit["thread_count"]() != 0:
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
        if kit["id"](finalizer) not in kit["finalizers_before"] and programs_code(kit, info.func):
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


def programs_code(kit: dict, function: Any) -> bool:
    """Whether ``function`` runs the program's code: a Python function (or a method of one)
    whose globals are not a loaded module's namespace (libraries register finalizers of their own)."""
    function = kit["getattr"](function, "__func__", function) if kit["type"](function) is kit["method_type"] else function
    if kit["type"](function) is not kit["function"]:
        return kit["type"](function) not in kit["c_callables"]
    name = kit["globals_of"](function).get("__name__")
    module = kit["modules"].get(name) if kit["type"](name) is str else None
    return module is None or kit["vars"](module) is not kit["globals_of"](function) or name in ("__test__", "__main__")


def value_problem(kit: dict, value: Any) -> str:
    """Why a value the entry point returned cannot be graded ("" when it can).

    Walks builtin containers (exact types) and refuses objects that answer comparisons for
    themselves: instances of classes the program made with such members, ``mock.ANY``, mock
    calls, and mocks whose comparison members were replaced; and generators and coroutines,
    whose code would run when the tests iterate them, outside the checked call.
    """
    type_, before, mro_of = kit["type"], kit["classes_before"], kit["mro_of"]
    pending, seen = [value], 0
    while pending:
        item = pending.pop()
        seen += 1
        if seen > VALUE_ITEMS:
            return ""
        kind = type_(item)
        if kind is list or kind is tuple or kind is set or kind is frozenset:
            pending.extend(item)
            continue
        if kind is dict:
            pending.extend(kit["items"](item))
            continue
        if kind is kit["mock_any"] or kind is kit["mock_call"]:
            return "it returned unittest.mock.ANY or a mock call, which equal anything"
        if kind in kit["lazy_code"]:
            return "it returned a generator or coroutine, whose code would run outside the checked call"
        for klass in mro_of(kind):
            members = kit["vars"](klass)
            if kit["issubclass"](klass, kit["mock_base"]):
                for member in ("__eq__", "__ne__"):
                    if member in members and type_(members[member]) is not kit["magic_proxy"]:
                        return f"it returned a mock whose {member} was replaced"
            elif kit["id"](klass) not in before:
                for member in kit["proxy_keys"](members):
                    if member in ANSWERING_MEMBERS:
                        return f"it returned an object of its own class {kit['name_of'](klass)} with {member}"
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

    def enter() -> dict:
        before = snapshot(kit, watched)
        kit["append"](kit["program_running"], True)
        return before

    def leave(before: dict, result: Any) -> None:
        kit["pop"](kit["program_running"])
        problem = changed(kit, before, snapshot(kit, watched), watched)
        problem = problem and f"{problem} changed during a call of the entry point"
        problem = problem or idle_problem(kit)
        if not problem and result is not nothing:
            problem = value_problem(kit, result)
        if problem:
            kit["append"](violations, problem)

    namespace: dict = {"__builtins__": {}}
    kit["exec"](kit["compile_wrapper"], namespace)
    code = namespace["wrapper"].__code__
    replacements = {"ENTER": enter, "TARGET": target, "LEAVE": leave, "BASE": kit["base_exception"], "NOTHING": nothing}
    constants = kit["tuple"](replacements.get(constant, constant) if kit["type"](constant) is str else constant
                             for constant in code.co_consts)
    wrapper = kit["function"](kit["code_replace"](code, co_consts=constants), {"__builtins__": {}},
                              kit["as_text"](target.__name__))
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
