"""Kind ``unittest``: the program's classes and the values it returns, as the tests would meet them (stdlib only).

Shipped into the sandbox as part of the runner's payload (:mod:`conductor_env.sandboxes.runner`);
:mod:`~conductor_env.sandboxes.runner_unittest_watch` uses it. Why: docs/THREAT_MODEL.md
("BigCodeBench"). A class the program makes may not answer comparisons itself
(:func:`answering_classes`), and a value its entry point returns may not hold one of its objects
that would, nor ``mock.ANY`` (:func:`value_problem`).
"""

from __future__ import annotations

from typing import Any

#: Class members through which an object answers a comparison, a truth test or a conversion
#: itself: a class the program made with one of them could pass ``assertEqual`` with any value.
ANSWERING_MEMBERS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__bool__",
        "__len__",
        "__contains__",
        "__getattr__",
        "__getattribute__",
        "__instancecheck__",
        "__subclasscheck__",
        "__float__",
        "__int__",
        "__index__",
        "__complex__",
        "__abs__",
        "__sub__",
        "__rsub__",
        "__round__",
        "__array__",
        "__array_ufunc__",
        "__array_function__",
        "__iter__",
        "__getitem__",
        "__hash__",
        "__str__",
        "__repr__",
        "__format__",
    }
)

#: Most items of a returned value that are looked at (containers nested in it included).
VALUE_ITEMS = 100_000


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
    {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__getattr__", "__getattribute__", "__instancecheck__", "__subclasscheck__", "__array_ufunc__", "__array_function__"}
)


def answering_classes(kit: dict, before: dict) -> str:
    """The name of a class made since ``before`` that answers comparisons itself ("" when none).

    Mocks are left out (every mock gets a class of its own with comparison members); the tests
    make them, and what a returned mock answers is checked by :func:`value_problem`. So are
    members that are a C type's own slots (numpy makes dtype classes as it needs them), and
    classes a module's own code defined (:func:`library_class`).
    """
    issubclass_, mock_base = kit["issubclass"], kit["mock_base"]
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


def library_class(kit: dict, klass: type, checked: frozenset = COMPARING_MEMBERS) -> bool:
    """Whether ``klass`` was defined by a module's own code (a lazy import's class, say
    ``email.charset.Charset``): each of its ``checked`` members that is a Python function was
    compiled from the file of the module whose namespace is its globals (``functools.total_ordering``
    adds functools' own; a dataclass's are compiled from text), and one of them belongs to the
    class's module (a package may name its submodules' classes after itself: numpy's
    ``set_module``). A class with no such function must be held by its module under its
    qualified name. A program that compiles its class under a module's file name and runs it in
    that module's namespace passes this test (see docs/THREAT_MODEL.md)."""
    type_, vars_ = kit["type"], kit["vars"]
    try:
        members = vars_(klass)
        module_name = members.get("__module__")
        if type_(module_name) is not str or module_name in ("__test__", "__main__"):
            return False
        functions = [value for name, value in kit["proxy_items"](members) if type_(name) is str and name in checked and type_(value) is kit["function"]]
        generated = "__dataclass_fields__" in members  # dataclasses compile their methods from text
        own_module = False
        for function in functions:
            globals_ = kit["globals_of"](function)
            defined_in = globals_.get("__name__")
            if type_(defined_in) is not str or defined_in in ("__test__", "__main__"):
                return False
            filename = kit["code_of"](function).co_filename
            if filename != globals_.get("__file__") and not (generated and filename == "<string>"):
                return False  # code run in a module's namespace, not compiled from its file
            own_module = own_module or defined_in == module_name or defined_in.startswith(module_name + ".")
        if functions:  # a C accelerator may shadow the class's name in its module (ElementTree)
            return own_module
        module = kit["modules"].get(module_name)
        if module is None:
            return False
        found = vars_(module)
        for part in kit["str"].split(kit["as_text"](kit["qualname_of"](klass)), "."):
            found = (found if type_(found) is dict else vars_(found)).get(part)
        return found is klass or type_(found) is klass  # or the module's one instance of it
    except kit["base_exception"]:  # noqa: BLE001 - not resolvable: not a library's
        return False


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
    calls, and mocks whose comparison members were replaced. (A generator it returns runs its
    code when the tests iterate it, outside the checked call: see docs/THREAT_MODEL.md.)
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
        for klass in mro_of(kind):
            members = kit["vars"](klass)
            if kit["issubclass"](klass, kit["mock_base"]):
                for member in ("__eq__", "__ne__"):
                    if member in members and type_(members[member]) is not kit["magic_proxy"]:
                        return f"it returned a mock whose {member} was replaced"
            elif kit["id"](klass) not in before and not library_class(kit, klass, ANSWERING_MEMBERS):
                for member in kit["proxy_keys"](members):
                    if type_(member) is str and member in ANSWERING_MEMBERS:
                        return f"it returned an object of its own class {kit['name_of'](klass)} with {member}"
    return ""
