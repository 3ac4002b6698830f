"""The records are declared in one module per domain, yet stay one namespace: every name is
importable from `railtrace.streams.records`, and the wire codec knows every record by its tag."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from types import ModuleType

import pytest

from railtrace.streams import codec, records


@pytest.mark.parametrize("module", records.MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_record_a_domain_module_declares_has_its_codec_tag(module: ModuleType) -> None:
    declared = {
        name: cls
        for name, cls in vars(module).items()
        if isinstance(cls, type)
        and dataclasses.is_dataclass(cls)
        and cls.__module__ == module.__name__
    }
    assert all(codec.RECORD_TYPES[name] is cls for name, cls in declared.items())


@pytest.mark.parametrize("module", records.MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_public_name_of_a_domain_module_imports_from_the_package(module: ModuleType) -> None:
    tree = ast.parse(inspect.getsource(module))
    defined = {
        target.id if isinstance(target, ast.Name) else getattr(node, "name", "")
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.Assign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node])
    }
    public = sorted(n for n in defined if n and not n.startswith("_"))
    assert public
    assert [n for n in public if getattr(records, n, None) is not vars(module)[n]] == []
