"""server.json, deskmcp's MCP Registry entry, against the registry's published schema (kept in
packaging/registry), and in agreement with the package it describes."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from typing import Any

import jsonschema
import pytest

from deskmcp.servers import SERVERS
from tests.helpers.processes import REPO

SERVER = json.loads((REPO / "server.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((REPO / "packaging" / "registry" / "server.schema.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SECRET_WORDS = ("KEY", "TOKEN", "PASSWORD", "SECRET")


def errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_server_json_validates_against_the_registry_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    assert errors(SERVER) == []
    assert SERVER["$schema"] == SCHEMA["$id"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda s: s.update(description="x" * 101), "description"),
        (lambda s: s.update(name="deskmcp"), "name"),
        (lambda s: s["packages"][0].update(version="latest"), "packages/0/version"),
        (lambda s: s["packages"][0].pop("transport"), "packages/0"),
    ],
)
def test_the_schema_refuses_what_the_registry_refuses(change: Any, path: str) -> None:
    # The check can fail: a broken entry is refused, naming where.
    broken = copy.deepcopy(SERVER)
    change(broken)
    assert any(e.startswith(path) for e in errors(broken)), errors(broken)


def test_the_entry_describes_the_package_pyproject_builds() -> None:
    package = SERVER["packages"][0]
    assert SERVER["version"] == package["version"] == PROJECT["version"]
    assert SERVER["description"] == PROJECT["description"]
    assert (package["registryType"], package["identifier"], package["runtimeHint"]) == ("pypi", "deskmcp", "uvx")
    assert package["transport"] == {"type": "stdio"}
    assert SERVER["repository"]["url"] == PROJECT["urls"]["Repository"]


def test_the_readme_names_the_registry_name_for_the_registry_to_check() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"mcp-name: (\S+)", readme) == [SERVER["name"]]
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/deskmcp", SERVER["name"])
    assert SERVER["repository"]["url"].endswith("/" + SERVER["name"].removeprefix("io.github."))


def test_the_package_arguments_are_a_deskmcp_serve_command() -> None:
    arguments = SERVER["packages"][0]["packageArguments"]
    assert arguments[0]["value"] == "serve"
    assert set(arguments[1]["choices"]) == {"all", *SERVERS}
    assert arguments[1]["default"] == "all"


def test_every_secret_variable_is_marked_secret_and_every_variable_is_documented() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for variable in SERVER["packages"][0]["environmentVariables"]:
        secret = any(word in variable["name"] for word in SECRET_WORDS)
        assert variable.get("isSecret", False) is secret, variable["name"]
        assert variable["description"]
    documented = [v["name"] for v in SERVER["packages"][0]["environmentVariables"] if v["name"] != "GRANOLA_API_KEY"]
    assert [name for name in documented if f"`{name}`" not in readme] == []
    remote = SERVER["remotes"][0]
    assert remote["type"] == "streamable-http" and remote["url"].endswith("/mcp")
    assert set(re.findall(r"{(\w+)}", remote["url"])) == set(remote["variables"])
    assert all(header["isSecret"] for header in remote["headers"])
