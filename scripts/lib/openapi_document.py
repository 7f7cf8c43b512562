"""Reads an OpenAPI 3.1 document and checks what schemathesis does not: every example in it
(request bodies, responses, parameters) is valid against its own schema, with formats such as
date-time checked too. Prints, as JSON, the document's operations ("GET /v1/agents", …) and how
many examples it checked, so the caller (RecordServerTests/OpenAPIDocumentTests) can compare
the operations with the routes the server registers. Exits 1 naming every example that fails.

    python3 scripts/lib/openapi_document.py docs/openapi.yaml

Needs PyYAML and jsonschema_rs, both of which schemathesis installs (scripts/bootstrap.sh puts
them in .build/schemathesis).
"""

import json
import sys
from urllib.parse import quote

import jsonschema_rs
import yaml

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def pointer(*parts):
    """A JSON pointer into the document (RFC 6901) as a URI fragment, for a $ref."""
    return "#/" + "/".join(quote(str(p).replace("~", "~0").replace("/", "~1"), safe="~") for p in parts)


def examples_of(holder, *where):
    """(place, pointer to its schema, value) of each example of a media type or parameter."""
    if "schema" not in holder:
        return
    schema = pointer(*where, "schema")
    if "example" in holder:
        yield ("/".join(map(str, where)), schema, holder["example"])
    for name, example in holder.get("examples", {}).items():
        yield ("/".join(map(str, where)) + f" ({name})", schema, example["value"])


def all_examples(document):
    for path, item in document["paths"].items():
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            base = ("paths", path, method)
            for index, parameter in enumerate(operation.get("parameters", [])):
                if "$ref" not in parameter:
                    yield from examples_of(parameter, *base, "parameters", index)
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                yield from examples_of(content, *base, "requestBody", "content", media)
            for status, response in operation["responses"].items():
                for media, content in response.get("content", {}).items():
                    yield from examples_of(content, *base, "responses", status, "content", media)
    components = document.get("components", {})
    for name, parameter in components.get("parameters", {}).items():
        yield from examples_of(parameter, "components", "parameters", name)
    for name, response in components.get("responses", {}).items():
        for media, content in response.get("content", {}).items():
            yield from examples_of(content, "components", "responses", name, "content", media)


def main(path):
    with open(path, encoding="utf-8") as file:
        document = yaml.safe_load(file)
    if not str(document.get("openapi", "")).startswith("3.1."):
        sys.exit(f"{path}: not an OpenAPI 3.1 document (openapi: {document.get('openapi')!r})")
    operations = sorted(
        f"{method.upper()} {route}" for route, item in document["paths"].items() for method in METHODS if method in item
    )
    failures, checked = [], 0
    for place, schema, value in all_examples(document):
        # The whole document is the root resource, so the schema's own $refs resolve in it.
        root = dict(document, **{"$ref": schema})
        try:
            validator = jsonschema_rs.Draft202012Validator(root, validate_formats=True)
        except Exception as error:  # a broken $ref or schema: say where
            failures.append(f"{place}: the schema does not compile: {str(error).splitlines()[0]}")
            continue
        checked += 1
        failures += [f"{place}: {error.message} at {list(error.instance_path)}" for error in validator.iter_errors(value)]
    if failures:
        sys.exit("examples that do not fit their schemas:\n" + "\n".join(failures))
    json.dump({"operations": operations, "examples": checked}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/openapi.yaml")
